// Service worker of the static page: after the first visit every file of the folder (files.json) is
// cached, so the page opens and runs offline. Requests outside the folder are never made or answered.
const CACHE = "vitviz-web-v1";

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const files = await (await fetch("files.json")).json();
    const cache = await caches.open(CACHE);
    await cache.addAll(["./", ...files]);
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || !url.href.startsWith(self.registration.scope)) return;
  event.respondWith((async () => {
    const cached = await caches.match(event.request, { ignoreSearch: true });
    if (cached) return cached;
    return fetch(event.request);
  })());
});

# vitviz: CPU image serving the app on 0.0.0.0:7860.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 GRADIO_ANALYTICS_ENABLED=False GRADIO_SERVER_NAME=0.0.0.0 GRADIO_SERVER_PORT=7860 \
    VITVIZ_WEIGHTS_DIR=/weights
RUN useradd --create-home --uid 1000 app
WORKDIR /home/app/vitviz
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY --chown=app:app . .
USER app
VOLUME ["/weights"]
EXPOSE 7860
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/', timeout=4)"
CMD ["python", "app.py"]

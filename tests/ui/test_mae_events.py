"""How the MAE tab's events are wired: one ordered listener for the view."""

from vitviz.ui.app import build_demo


def test_every_view_control_shares_one_ordered_listener():
    """Seed, ratio, pattern, model, image, compare and paint changes are one dependency with
    ``always_last``, so the browser runs its view calls one after another in its own order and
    a slower, older call can never overwrite a newer view."""
    demo = build_demo()
    views = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "update_view"]
    main = max(views, key=lambda f: len(f.targets))
    assert len(main.targets) == 7 and all(event == "change" for _, event in main.targets)
    assert main.trigger_mode == "always_last"
    others = [f for f in views if f is not main]
    assert all(t == [(None, "then")] for t in (f.targets for f in others))  # after a paint click or page load
    sweeps = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "run_sweep" and len(f.targets) == 4]
    assert len(sweeps) == 1 and {b for b, _ in sweeps[0].targets} < {b for b, _ in main.targets}

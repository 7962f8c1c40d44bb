# Image for web and workers. GPU workers build with --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu124
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=config.settings.production
WORKDIR /app
COPY requirements/ requirements/
RUN pip install --no-cache-dir -r requirements/lock.txt
COPY . .
RUN SECRET_KEY=build ALLOWED_HOSTS=build DATABASE_URL=sqlite:////tmp/build.sqlite3 \
    python manage.py collectstatic --noinput -v0
EXPOSE 8000
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "4"]

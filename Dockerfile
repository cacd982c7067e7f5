# clearloop: one image for the web (daphne) and worker (celery) services.
FROM python:3.12-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 CLEARLOOP_DATA_DIR=/data
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY agent ./agent
COPY demo ./demo
COPY chatapp ./chatapp
RUN pip install --no-cache-dir .
COPY manage.py ./
COPY templates ./templates
COPY static ./static
# The compiled translations (locale/*/LC_MESSAGES/*.mo) are committed: the image needs no gettext.
COPY locale ./locale
RUN DEBUG=1 python manage.py collectstatic --noinput && useradd --create-home clearloop \
    && mkdir -p /data && chown clearloop /data
USER clearloop
EXPOSE 8000
# backlog: the accept queue as chatapp/devstack.py sets it (LISTEN_BACKLOG).
CMD ["daphne", "-e", "tcp:port=8000:interface=0.0.0.0:backlog=1024", "chatapp.asgi:application"]

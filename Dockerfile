FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
# The apps, in layers (docs/architecture.md); task_types/ holds one package per task type.
COPY config config
COPY core core
COPY metrics metrics
COPY projects projects
COPY annotation annotation
COPY crowd crowd
COPY llm_judges llm_judges
COPY agreement agreement
COPY studies studies
COPY task_types task_types
RUN pip install --no-cache-dir .
COPY . .
RUN DJANGO_DEBUG=false DJANGO_SECRET_KEY=build-only python manage.py collectstatic --noinput
RUN useradd --create-home concord
USER concord
EXPOSE 8000
# Workers, worker class and threads from GUNICORN_* (config/gunicorn.py, README.md).
CMD ["gunicorn", "-c", "config/gunicorn.py", "config.wsgi:application"]

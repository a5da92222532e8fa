#!/usr/bin/env bash
# (Re)start Label Studio 1.23.2 for the side-by-side benchmarks (bench/vs_label_studio.py,
# bench/export_task_types.py; docs/vs_label_studio.md). Paths below are this machine's: edit them.
#   bash bench/label_studio_up.sh            # stop ours if running, migrate, ensure 20 users, start
#   bash bench/label_studio_up.sh --reset    # same, but drop and recreate database ls_bench first
#   bash bench/label_studio_up.sh --stop     # stop it only
# Writes /work/notes/ls.env (LS_URL, LS_TOKEN, LS_TOKENS, LS_PID). Idempotent.
set -euo pipefail

VENV=/work/lsvenv
LS=$VENV/lib/python3.11/site-packages/label_studio
DATA=/work/lsdata
PIDFILE=$DATA/gunicorn.pid
LOG=$DATA/gunicorn.log
ENVFILE=/work/notes/ls.env
PORT=8081
DB=ls_bench

export DJANGO_DB=default POSTGRE_NAME=$DB POSTGRE_USER=postgres POSTGRE_PASSWORD= \
  POSTGRE_HOST=127.0.0.1 POSTGRE_PORT=5432
export DJANGO_SETTINGS_MODULE=core.settings.label_studio
export LABEL_STUDIO_BASE_DATA_DIR=$DATA
export DEBUG=false LOG_LEVEL=WARNING
export LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK=true
export LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true
export SENTRY_DSN= FRONTEND_SENTRY_DSN=
export LABEL_STUDIO_HOST=http://127.0.0.1:$PORT
export PYTHONPATH=$LS

mkdir -p "$DATA"

stop() {
  if [[ -f $PIDFILE ]]; then
    pid=$(cat "$PIDFILE")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    fi
    rm -f "$PIDFILE"
  fi
}

stop
[[ ${1:-} == --stop ]] && exit 0

if [[ ${1:-} == --reset ]]; then
  psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB"
fi
psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$DB'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $DB"

cd "$LS"
$VENV/bin/python manage.py migrate --noinput -v0 >"$DATA/migrate.log" 2>&1 \
  || { tail -30 "$DATA/migrate.log"; exit 1; }

# 20 users in one organization, each with a legacy API token; legacy tokens enabled for the org.
$VENV/bin/python manage.py shell -c '
from organizations.models import Organization
from rest_framework.authtoken.models import Token
from users.models import User
tokens = []
for n in range(20):
    email = f"bench{n:02d}@example.com"
    user = User.objects.filter(email=email).first()
    if user is None:
        user = User.objects.create_user(email=email, password="bench-password-1", username=f"bench{n:02d}")
        if n == 0:
            user.is_staff = user.is_superuser = True
            user.save()
    org = Organization.objects.first()
    if org is None:
        org = Organization.create_organization(created_by=user, title="Label Studio", legacy_api_tokens_enabled=True)
    elif not org.has_user(user):
        org.add_user(user)
    if user.active_organization_id != org.id:
        user.active_organization = org
        user.save(update_fields=["active_organization"])
    tokens.append(Token.objects.get_or_create(user=user)[0].key)
jwt = org.jwt
jwt.legacy_api_tokens_enabled = True
jwt.save()
print("TOKENS", " ".join(tokens))
' >"$DATA/users.out" 2>&1 || { tail -30 "$DATA/users.out"; exit 1; }
read -r -a TOKENS <<<"$(grep '^TOKENS ' "$DATA/users.out" | cut -d' ' -f2-)"
[[ ${#TOKENS[@]} -eq 20 ]] || { cat "$DATA/users.out"; exit 1; }

# setsid: the server outlives the shell that started it.
setsid $VENV/bin/gunicorn core.wsgi:application --chdir "$LS" --bind 127.0.0.1:$PORT \
  --workers 3 --worker-class sync --timeout 3600 --pid "$PIDFILE" \
  --env DJANGO_SETTINGS_MODULE=core.settings.label_studio >"$LOG" 2>&1 </dev/null &

for _ in $(seq 1 120); do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Token ${TOKENS[0]}" \
    "http://127.0.0.1:$PORT/api/projects/" || true)
  [[ $code == 200 ]] && break
  sleep 1
done
[[ ${code:-} == 200 ]] || { echo "Label Studio did not answer 200 (got ${code:-none})"; tail -30 "$LOG"; exit 1; }

cat >"$ENVFILE" <<EOF
export LS_URL=http://127.0.0.1:$PORT
export LS_TOKEN=${TOKENS[0]}
export LS_TOKENS="${TOKENS[*]:1}"
export LS_PID=$(cat "$PIDFILE")
EOF
echo "Label Studio up: $(grep LS_URL "$ENVFILE"), master pid $(cat "$PIDFILE"); env in $ENVFILE"

#!/usr/bin/env bash
# Checks the Dockerfile without a Docker engine, on a Debian 12 machine (the image's base).
#
#   bash scripts/docker_check.sh                     # full: copy the context, build, install, run
#   bash scripts/docker_check.sh --prebuilt build    # reuse a configured build tree, skip compiling
#   options: --keep (keep the temp dir), --no-netns (share this machine's network, another port)
#
# What it does, reading everything from the Dockerfile itself:
#   1. parses the Dockerfile (ARG BUILD_PACKAGES / RUNTIME_PACKAGES / CMAKE_ARGS / PREFIX,
#      the build stage's cmake RUN line, COPY --from, USER, WORKDIR, VOLUME, EXPOSE, STOPSIGNAL,
#      HEALTHCHECK, ENTRYPOINT) and fails on instructions it does not know how to mirror;
#   2. installs the missing build and runtime packages with apt-get;
#   3. copies the build context as .dockerignore filters it and runs the build stage's cmake RUN
#      line in it, with /staging moved to a temp dir (--prebuilt: only its `cmake --install` part,
#      on the given tree);
#   4. checks with ldd that every shared library of the installed binary resolves, and with
#      dpkg -S that each one (and redis-cli) belongs to a package of RUNTIME_PACKAGES;
#   5. runs the ENTRYPOINT as a non-root user (the Dockerfile's USER if it exists here, else
#      nobody) with a temp dir as the VOLUME, in a fresh network namespace when possible so the
#      port is the EXPOSEd one, runs the HEALTHCHECK command against it, checks protected mode
#      (a non-loopback client is refused), stops it with the STOPSIGNAL, then runs it again with
#      `--requirepass` appended as `docker run IMAGE --requirepass ...` would, and checks that the
#      health check still passes, that a non-loopback client can AUTH, and that the data survived.
#
# What it cannot check: the base image's own contents (it uses this machine's Debian 12 instead),
# the runtime stage's useradd RUN line, layer caching, and Docker's port publishing.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
SELF="$REPO/scripts/docker_check.sh"

ok() { printf 'ok: %s\n' "$*"; }
info() { printf '    %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# ----------------------------------------------------------------------------------------------
# Run phase: started by the main phase (possibly inside `unshare --net`) with its settings in the
# environment. Starts the server as the container would and probes it.
# ----------------------------------------------------------------------------------------------
pid=""
run_phase() {
  cleanup_run() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  }
  trap cleanup_run EXIT

  if [ "${DC_NETNS:-0}" = 1 ]; then
    ip link set lo up
    # A second, non-loopback address on lo: a client connecting to it is not a loopback client.
    ip addr add 10.200.0.1/32 dev lo
    DC_EXTERNAL_IP=10.200.0.1
  fi

  local -a entry extra envs
  eval "entry=($DC_ENTRY)"   # words are shell-quoted by the main phase
  eval "extra=($DC_EXTRA)"
  eval "envs=($DC_ENV)"
  local health="$DC_HEALTH"
  local port="$DC_PORT"
  local -a asuser=()
  if [ -n "$DC_RUN_UID" ]; then
    asuser=(setpriv --reuid="$DC_RUN_UID" --regid="$DC_RUN_GID" --clear-groups --)
  fi
  local -a cli=(redis-cli -p "$port")

  start_server() {  # $@: args appended after the ENTRYPOINT
    local log="$DC_TMP/server.$1.log"; shift
    info "starting: $(printf '%s ' "${asuser[@]}" "${entry[@]}" "${extra[@]}" "$@")"
    (cd "$DC_WORKDIR" && exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME="$DC_WORKDIR" "${envs[@]}" "${asuser[@]}" "${entry[@]}" "${extra[@]}" "$@") >"$log" 2>&1 &
    pid=$!
    # Like HEALTHCHECK --start-period: poll the health check until it passes.
    local deadline=$((SECONDS + 60))
    until sh -c "$health" >/dev/null 2>&1; do
      if ! kill -0 "$pid" 2>/dev/null; then cat "$log" >&2; fail "server exited at start-up"; fi
      [ $SECONDS -lt $deadline ] || { cat "$log" >&2; fail "health check never passed"; }
      sleep 0.3
    done
    ok "HEALTHCHECK passes: $health"
    local uid
    uid=$(awk '/^Uid:/{print $2}' "/proc/$pid/status")
    if [ -n "$DC_RUN_UID" ]; then
      [ "$uid" = "$DC_RUN_UID" ] || fail "server runs as uid $uid, expected $DC_RUN_UID"
      ok "server runs as non-root uid $uid"
    fi
  }

  stop_server() {
    kill "-$DC_STOPSIGNAL" "$pid"
    local rc=0
    # `docker stop` waits 10 s by default before SIGKILL.
    local deadline=$((SECONDS + 10))
    while kill -0 "$pid" 2>/dev/null; do
      [ $SECONDS -lt $deadline ] || fail "server did not stop within 10 s of SIG$DC_STOPSIGNAL"
      sleep 0.2
    done
    wait "$pid" || rc=$?
    pid=""
    [ "$rc" = 0 ] || fail "server exited with $rc after SIG$DC_STOPSIGNAL"
    ok "SIG$DC_STOPSIGNAL stops the server cleanly (exit 0)"
  }

  # 1. As `docker run IMAGE`: no password, protected mode on.
  start_server plain
  [ "$("${cli[@]}" ping)" = PONG ] || fail "PING over loopback"
  [ "$("${cli[@]}" CF.RESERVE dc_filter 1000)" = OK ] || fail "CF.RESERVE"
  [ "$("${cli[@]}" CF.ADD dc_filter alpha)" = 1 ] || fail "CF.ADD"
  ok "loopback client: PING, CF.RESERVE, CF.ADD"
  if [ -n "${DC_EXTERNAL_IP:-}" ]; then
    local reply
    reply=$(redis-cli -h "$DC_EXTERNAL_IP" -p "$port" ping 2>&1 || true)
    case "$reply" in
      DENIED*) ok "protected mode: a non-loopback client ($DC_EXTERNAL_IP) is refused (DENIED)" ;;
      *) fail "non-loopback client without a password got: $reply" ;;
    esac
  else
    info "skipped: no non-loopback address to test protected mode with"
  fi
  local owner
  owner=$(find "$DC_DATA" -mindepth 1 -printf '%u\n' | sort -u | tr '\n' ' ')
  ok "files in the VOLUME are owned by: $owner"
  stop_server

  # 2. As `docker run IMAGE --requirepass secret`, on the same volume.
  start_server auth --requirepass dc-secret
  [ "$("${cli[@]}" ping)" = "NOAUTH Authentication required." ] || fail "PING without AUTH"
  [ "$("${cli[@]}" --no-auth-warning -a dc-secret CF.EXISTS dc_filter alpha)" = 1 ] \
    || fail "the filter did not survive the restart"
  ok "appended --requirepass applies; the filter survived the restart"
  if [ -n "${DC_EXTERNAL_IP:-}" ]; then
    [ "$(redis-cli -h "$DC_EXTERNAL_IP" -p "$port" --no-auth-warning -a dc-secret ping)" = PONG ] \
      || fail "non-loopback client with the password"
    ok "with a password, a non-loopback client is accepted after AUTH"
  fi
  stop_server
}

if [ "${1:-}" = "--run-phase" ]; then
  run_phase
  exit 0
fi

# ----------------------------------------------------------------------------------------------
# Main phase.
# ----------------------------------------------------------------------------------------------
PREBUILT=""
KEEP=0
NO_NETNS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) PREBUILT="$(cd "$2" && pwd)"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --no-netns) NO_NETNS=1; shift ;;
    -h|--help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$SELF"; exit 0 ;;
    *) fail "unknown argument: $1 (see --help)" ;;
  esac
done

TMP="$(mktemp -d /tmp/cuckood-docker-check.XXXXXX)"
cleanup() {
  if [ "$KEEP" = 1 ]; then info "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# 1. Parse the Dockerfile into shell assignments.
PARSED="$(python3 - "$REPO/Dockerfile" <<'EOF'
import json, re, shlex, sys

KNOWN = {"ARG", "FROM", "RUN", "WORKDIR", "COPY", "USER", "VOLUME", "EXPOSE", "STOPSIGNAL",
         "HEALTHCHECK", "ENTRYPOINT", "CMD", "LABEL", "ENV"}

def die(msg):
    print("fail %s" % shlex.quote("Dockerfile: " + msg))
    sys.exit(0)

lines, cur = [], ""
for raw in open(sys.argv[1], encoding="utf-8"):
    s = raw.rstrip("\n")
    if s.lstrip().startswith("#"):
        continue                     # comments, also inside continuations, as Docker does
    if s.endswith("\\"):
        cur += s[:-1] + " "
        continue
    cur += s
    if cur.strip():
        lines.append(cur.strip())
    cur = ""

args, stages = {}, []
def subst(text):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)),
                  text)

for line in lines:
    instr, _, rest = line.partition(" ")
    instr, rest = instr.upper(), rest.strip()
    if instr not in KNOWN:
        die("instruction %s is not mirrored by scripts/docker_check.sh; teach it" % instr)
    if instr == "ARG":
        name, eq, value = rest.partition("=")
        if eq:
            args[name] = " ".join(shlex.split(value))
        elif name not in args:
            die("ARG %s has no value" % name)
        continue
    if instr == "FROM":
        words = subst(rest).split()
        stages.append({"image": words[0], "name": words[2] if len(words) > 2 else "",
                       "run": [], "copy": [], "env": []})
        continue
    if not stages:
        die("%s before FROM" % instr)
    st = stages[-1]
    if instr == "RUN":
        st["run"].append(rest)
    elif instr == "COPY":
        st["copy"].append(rest)
    elif instr == "ENV":
        st["env"].extend(subst(w) for w in shlex.split(rest))
    elif instr in ("ENTRYPOINT", "CMD"):
        try:
            st[instr] = json.loads(rest)
        except ValueError:
            die("%s must use the exec (JSON) form" % instr)
    elif instr == "HEALTHCHECK":
        m = re.match(r"((?:--\S+\s+)*)CMD\s+(.*)$", rest)
        if not m:
            die("HEALTHCHECK without CMD")
        st["health"] = m.group(2)
        try:
            st["health_argv"] = json.loads(m.group(2))
            st["health"] = " ".join(shlex.quote(a) for a in st["health_argv"][1:])
        except ValueError:
            pass
    else:
        st[instr] = subst(rest)

if len(stages) != 2:
    die("expected two stages, found %d" % len(stages))
build, runtime = stages
for name in ("BUILD_PACKAGES", "RUNTIME_PACKAGES", "CMAKE_ARGS", "PREFIX", "DEBIAN_IMAGE"):
    if name not in args:
        die("missing ARG %s" % name)
for st, var in ((build, "BUILD_PACKAGES"), (runtime, "RUNTIME_PACKAGES")):
    if not any("apt-get install" in r and "${%s}" % var in r for r in st["run"]):
        die("the %s stage must install ${%s} with apt-get" % (st["name"], var))
cmake_runs = [r for r in build["run"] if "cmake" in r]
if len(cmake_runs) != 1:
    die("expected one cmake RUN line in the build stage")
copies = [c for c in runtime["copy"] if c.startswith("--from=%s " % build["name"])]
if copies != ["--from=%s /staging${PREFIX}/ ${PREFIX}/" % build["name"]]:
    die("runtime COPY must be `COPY --from=%s /staging${PREFIX}/ ${PREFIX}/`" % build["name"])
for key in ("ENTRYPOINT", "HEALTHCHECK", "USER", "VOLUME", "EXPOSE"):
    if key not in runtime and not (key == "HEALTHCHECK" and "health" in runtime):
        die("runtime stage has no %s" % key)
volume = runtime["VOLUME"]
volume = json.loads(volume)[0] if volume.startswith("[") else volume.split()[0]
other_runs = [r for r in runtime["run"] if "${RUNTIME_PACKAGES}" not in r]

out = {
    "IMAGES": " ".join(s["image"] for s in stages),
    "BUILD_PACKAGES": args["BUILD_PACKAGES"], "RUNTIME_PACKAGES": args["RUNTIME_PACKAGES"],
    "CMAKE_ARGS": args["CMAKE_ARGS"], "PREFIX": args["PREFIX"],
    "BUILD_WORKDIR": build.get("WORKDIR", "/"), "BUILD_RUN": cmake_runs[0],
    "RUN_USER": runtime["USER"].split(":")[0], "WORKDIR": runtime.get("WORKDIR", "/"),
    "VOLUME": volume, "EXPOSE": runtime["EXPOSE"].split("/")[0].split()[0],
    "STOPSIGNAL": runtime.get("STOPSIGNAL", "SIGTERM").replace("SIG", ""),
    "HEALTH": runtime["health"], "ENV": " ".join(shlex.quote(e) for e in runtime["env"]),
    "ENTRY": " ".join(shlex.quote(a) for a in runtime["ENTRYPOINT"] + runtime.get("CMD", [])),
    "OTHER_RUNS": " ;; ".join(other_runs),
}
for k, v in out.items():
    print("DF_%s=%s" % (k, shlex.quote(v)))
EOF
)"
if [[ "$PARSED" == fail\ * ]]; then eval "fail ${PARSED#fail }"; fi
eval "$PARSED"
ok "parsed Dockerfile: stages on $DF_IMAGES; ENTRYPOINT $DF_ENTRY"

# 2. Packages.
. /etc/os-release
case "$DF_IMAGES" in
  *"debian:${VERSION_CODENAME}"*) ok "this machine runs Debian ${VERSION_ID} ($VERSION_CODENAME), the image's base" ;;
  *) info "WARNING: this machine is $PRETTY_NAME, the image is based on $DF_IMAGES: package names may differ" ;;
esac
read -r -a build_pkgs <<<"$DF_BUILD_PACKAGES"
read -r -a runtime_pkgs <<<"$DF_RUNTIME_PACKAGES"
wanted=("${runtime_pkgs[@]}")
[ -n "$PREBUILT" ] || wanted+=("${build_pkgs[@]}")
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || fail "missing packages (run as root to install): ${missing[*]}"
  info "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
ok "packages installed: ${wanted[*]}"

# 3. Build and install into a staging root, as the build stage does.
STAGING="$TMP/staging"
export CMAKE_ARGS="$DF_CMAKE_ARGS" PREFIX="$DF_PREFIX"
if [ -z "$PREBUILT" ]; then
  CONTEXT="$TMP/context"
  python3 - "$REPO" "$CONTEXT" <<'EOF'
import os, re, shutil, sys

src, dst = sys.argv[1], sys.argv[2]
rules = []
ignore_file = os.path.join(src, ".dockerignore")
if os.path.exists(ignore_file):
    for line in open(ignore_file, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        neg = line.startswith("!")
        pat = line[1:] if neg else line
        pat = pat.strip("/")
        rx, i = "", 0
        while i < len(pat):
            if pat.startswith("**/", i):
                rx += "(?:.*/)?"; i += 3
            elif pat.startswith("**", i):
                rx += ".*"; i += 2
            elif pat[i] == "*":
                rx += "[^/]*"; i += 1
            elif pat[i] == "?":
                rx += "[^/]"; i += 1
            else:
                rx += re.escape(pat[i]); i += 1
        rules.append((re.compile(rx + r"\Z"), neg))

def excluded(rel):
    # A path is out if the last rule matching it or one of its parents excludes it.
    parts = rel.split("/")
    result = False
    for rx, neg in rules:
        if any(rx.match("/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            result = not neg
    return result

count = 0
for root, dirs, files in os.walk(src):
    rel_root = os.path.relpath(root, src)
    rel_root = "" if rel_root == "." else rel_root + "/"
    dirs[:] = [d for d in dirs if not excluded(rel_root + d)]
    os.makedirs(os.path.join(dst, rel_root), exist_ok=True)
    for f in files:
        if not excluded(rel_root + f):
            shutil.copy2(os.path.join(root, f), os.path.join(dst, rel_root + f), follow_symlinks=False)
            count += 1
print("    build context: %d files (after .dockerignore)" % count)
EOF
  build_cmd="${DF_BUILD_RUN//\/staging/$STAGING}"
  info "in $CONTEXT (WORKDIR $DF_BUILD_WORKDIR): $build_cmd"
  (cd "$CONTEXT" && sh -ec "$build_cmd") >"$TMP/build.log" 2>&1 \
    || { tail -50 "$TMP/build.log" >&2; fail "build stage RUN failed (log above)"; }
  ok "build stage: compiled with $DF_CMAKE_ARGS and installed into /staging"
else
  # Only the `cmake --install` part of the build stage's RUN line, on the given tree.
  install_cmd="$(printf '%s\n' "$DF_BUILD_RUN" | sed 's/&&/\n/g' | grep 'cmake --install' | head -1)"
  [ -n "$install_cmd" ] || fail "no cmake --install in the build stage's RUN line"
  install_cmd="$(printf '%s' "$install_cmd" | sed -E "s#cmake --install [^ ]+#cmake --install $PREBUILT#")"
  install_cmd="${install_cmd//\/staging/$STAGING}"
  info "prebuilt tree $PREBUILT: $install_cmd"
  grep -q 'CUCKOOD_TESTS:BOOL=OFF' "$PREBUILT/CMakeCache.txt" 2>/dev/null \
    || info "note: the prebuilt tree is not configured like the image ($DF_CMAKE_ARGS)"
  sh -ec "$install_cmd" >"$TMP/install.log" 2>&1 || { cat "$TMP/install.log" >&2; fail "cmake --install"; }
  ok "build stage: installed the prebuilt tree into /staging"
fi
ROOT="$STAGING"   # COPY --from=build /staging${PREFIX}/ ${PREFIX}/
chmod 0755 "$TMP" "$STAGING"

# 4. The installed files and their libraries.
eval "entry=($DF_ENTRY)"
mapped=()
for a in "${entry[@]}"; do
  if [[ "$a" == "$DF_PREFIX"/* ]]; then
    [ -e "$ROOT$a" ] || fail "ENTRYPOINT refers to $a, which the install does not provide"
    mapped+=("$ROOT$a")
  else
    mapped+=("$a")
  fi
done
BIN="${mapped[0]}"
[ -x "$BIN" ] || fail "ENTRYPOINT binary ${entry[0]} is not an executable"
ok "installed: $(cd "$ROOT" && find . -type f | sed 's#^\.##' | sort | tr '\n' ' ')"
info "binary: $(du -h "$BIN" | cut -f1), $("$BIN" --version 2>&1 | head -1)"

owner_pkg() {  # the Debian package that owns a file, trying the /usr-merged spellings too
  local f="$1" real p
  real="$(readlink -f "$f")"
  for p in "$f" "$real" "${f#/usr}" "/usr$f" "${real#/usr}" "/usr$real"; do
    if out="$(dpkg -S "$p" 2>/dev/null)"; then printf '%s' "${out%%:*}"; return 0; fi
  done
  return 1
}
in_runtime() { local p; for p in "${runtime_pkgs[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }

ldd_out="$(ldd "$BIN")"
if grep -q 'not found' <<<"$ldd_out"; then
  printf '%s\n' "$ldd_out" >&2; fail "unresolved shared libraries"
fi
used_pkgs=()
while read -r lib; do
  pkg="$(owner_pkg "$lib")" || fail "no Debian package owns $lib"
  in_runtime "$pkg" || fail "$lib comes from $pkg, which is not in RUNTIME_PACKAGES"
  info "$lib <- $pkg"
  used_pkgs+=("$pkg")
done < <(awk '/=>/ {print $3; next} $1 ~ /^\// {print $1}' <<<"$ldd_out")
ok "every shared library resolves and comes from RUNTIME_PACKAGES"

for cmd in $(grep -oE '(^|[|;&(] *)[a-z][a-z0-9._-]*' <<<"$DF_HEALTH" | grep -oE '[a-z][a-z0-9._-]*$' | sort -u); do
  [ "$cmd" = exit ] && continue
  path="$(command -v "$cmd")" || fail "HEALTHCHECK command $cmd is not installed"
  pkg="$(owner_pkg "$path")" || fail "no Debian package owns $path"
  essential="$(dpkg-query -W -f='${Essential}' "$pkg")"
  if in_runtime "$pkg"; then
    info "HEALTHCHECK: $cmd <- $pkg"; used_pkgs+=("$pkg")
  elif [ "$essential" = yes ]; then
    info "HEALTHCHECK: $cmd <- $pkg (Essential: in every Debian image)"
  else
    fail "HEALTHCHECK command $cmd comes from $pkg, which is not in RUNTIME_PACKAGES"
  fi
done
ok "the HEALTHCHECK's commands come from RUNTIME_PACKAGES or essential packages"
for p in "${runtime_pkgs[@]}"; do
  printf '%s\n' "${used_pkgs[@]}" | grep -qx "$p" || info "note: $p in RUNTIME_PACKAGES is not used directly"
done

# 5. Run it as the container would.
DATA="$TMP/volume"
WORKDIR_DIR="$DATA"
[ "$DF_WORKDIR" = "$DF_VOLUME" ] || fail "docker_check.sh assumes WORKDIR = VOLUME ($DF_WORKDIR vs $DF_VOLUME)"
mkdir -p "$DATA"
RUN_UID="" RUN_GID=""
if [ "$(id -u)" = 0 ]; then
  if id "$DF_RUN_USER" >/dev/null 2>&1; then run_user="$DF_RUN_USER"; else run_user=nobody; fi
  RUN_UID="$(id -u "$run_user")"
  RUN_GID="$(id -g "$run_user")"
  chown "$RUN_UID:$RUN_GID" "$DATA"
  chmod 0750 "$DATA"
  ok "runs as user $run_user (uid $RUN_UID) in place of the image's USER $DF_RUN_USER"
else
  info "not root: runs as $(id -un) (cannot switch users)"
fi
[ -z "$DF_OTHER_RUNS" ] || info "not mirrored (runtime RUN): $DF_OTHER_RUNS"

run_entry=()
for a in "${mapped[@]}"; do
  if [ "$a" = "$DF_VOLUME" ]; then run_entry+=("$DATA"); else run_entry+=("$a"); fi
done
quoted_entry="$(printf '%q ' "${run_entry[@]}")"

export DC_TMP="$TMP" DC_DATA="$DATA" DC_WORKDIR="$WORKDIR_DIR" DC_ENTRY="$quoted_entry"
export DC_RUN_UID="$RUN_UID" DC_RUN_GID="$RUN_GID" DC_STOPSIGNAL="$DF_STOPSIGNAL" DC_ENV="$DF_ENV"
if [ "$NO_NETNS" = 0 ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v ip >/dev/null \
   && unshare --net true 2>/dev/null; then
  # A fresh network namespace: port EXPOSE is free and the flags are exactly the ENTRYPOINT's.
  export DC_NETNS=1 DC_PORT="$DF_EXPOSE" DC_EXTRA="" DC_HEALTH="$DF_HEALTH"
  ok "running in a fresh network namespace on port $DF_EXPOSE, flags exactly as the ENTRYPOINT"
  unshare --net -- bash "$SELF" --run-phase
else
  # Shared network: another port, appended as `docker run IMAGE --port N` would.
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  health="$DF_HEALTH"
  if grep -q -- "-p $DF_EXPOSE" <<<"$health"; then
    health="${health//-p $DF_EXPOSE/-p $port}"
  else
    health="${health//redis-cli/redis-cli -p $port}"
  fi
  external="$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9.]+$' | grep -v '^127\.' | head -1 || true)"
  export DC_NETNS=0 DC_PORT="$port" DC_EXTRA="--port $port" DC_HEALTH="$health" DC_EXTERNAL_IP="$external"
  info "no network namespace: port $port appended as --port, health check rewritten to: $health"
  bash "$SELF" --run-phase
fi

echo "docker_check: all checks passed"

# shellcheck shell=bash
# Sourced by the project's scripts: puts a Node that package.json's engines accept first on
# PATH and installs node_modules when the lockfile changed. Never installs anything globally.

WAYBILL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WAYBILL_CACHE="${WAYBILL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/waybill}"
# This checkout's state: infrastructure data, pid files and logs, test results, the Node link.
WAYBILL_LOCAL="${WAYBILL_LOCAL:-$WAYBILL_ROOT/.local}"
export WAYBILL_ROOT WAYBILL_CACHE WAYBILL_LOCAL

log() { printf '[waybill] %s\n' "$*" >&2; }

# print_header SCRIPT: SCRIPT's header comment (what it does, its usage), without the `#`s.
print_header() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$1" | sed 's/^# \{0,1\}//'; }

# help_if_asked SCRIPT ARG: with -h or --help as ARG, prints SCRIPT's header and exits, before
# the script installs or starts anything.
help_if_asked() {
  case "${2:-}" in
    -h | --help)
      print_header "$1"
      exit 0
      ;;
  esac
}
die() { printf '[waybill] error: %s\n' "$*" >&2; exit 1; }

# node_minimum: the oldest Node package.json's engines accept (its `>=` bound).
# node_supported BIN: whether the node binary BIN is that version or later.
node_minimum() {
  sed -n 's/.*"node": *">= *\([0-9][0-9.]*\)".*/\1/p' "$WAYBILL_ROOT/package.json" | head -n 1
}
node_supported() {
  local have need
  have="$("$1" -p 'process.versions.node' 2>/dev/null | tail -n 1)" || return 1
  need="$(node_minimum)"
  [ -n "$need" ] || die "cannot read the >= bound of engines.node in $WAYBILL_ROOT/package.json"
  [[ $have =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || return 1
  [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)" = "$need" ]
}

# Node from the npm registry package node-linux-<arch>, pinned by .nvmrc, kept in
# the user cache (so clean clones and CI reuse it) and linked into .local/node.
ensure_node() {
  local want arch pkg dir
  want="$(tr -d ' \n' < "$WAYBILL_ROOT/.nvmrc")"
  if command -v node >/dev/null && node_supported node; then
    return 0
  fi
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "no prebuilt Node for $(uname -m); install Node $(node_minimum) or later yourself" ;;
  esac
  pkg="node-linux-$arch"
  dir="$WAYBILL_CACHE/node-$want-$arch"
  if [ ! -x "$dir/bin/node" ]; then
    command -v npm >/dev/null || die "npm is needed once to fetch Node $want (package $pkg)"
    log "fetching Node $want from the npm registry package $pkg"
    local tmp
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "$pkg@$want" >/dev/null) || die "npm pack $pkg@$want failed"
    mkdir -p "$dir"
    tar -xzf "$tmp"/"$pkg"-*.tgz -C "$dir" --strip-components=1
    rm -rf "$tmp"
  fi
  mkdir -p "$WAYBILL_LOCAL"
  ln -sfn "$dir" "$WAYBILL_LOCAL/node"
  export PATH="$WAYBILL_LOCAL/node/bin:$PATH"
  node_supported node || die "Node $want did not start, or is older than package.json's engines ($(node_minimum))"
}

# npm ci when node_modules is missing or older than the lockfile; leaves a linked node_modules
# alone.
ensure_modules() {
  local stamp="$WAYBILL_ROOT/node_modules/.package-lock.json"
  # A linked node_modules (a git worktree sharing another checkout's) is that checkout's to
  # install: npm ci here would empty it under everyone using it.
  if [ -L "$WAYBILL_ROOT/node_modules" ]; then
    return 0
  fi
  if [ ! -f "$stamp" ] || [ "$WAYBILL_ROOT/package-lock.json" -nt "$stamp" ]; then
    log "installing node modules (npm ci)"
    (cd "$WAYBILL_ROOT" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci failed"
  fi
}

# Stops the servers of the local infrastructure that `scripts/infra up` named in FILE (the file
# given to it as WAYBILL_INFRA_STARTED), and only those, then removes FILE: servers that were
# already running stay up. With WAYBILL_KEEP_INFRA set, stops nothing. For an EXIT trap:
#   trap 'stop_started_infra "$file"' EXIT; trap 'exit 130' INT; trap 'exit 143' TERM
stop_started_infra() {
  local file="${1:-}" started=()
  [ -n "$file" ] || return 0
  mapfile -t started < <(sort -u "$file" 2>/dev/null || true)
  rm -f "$file"
  [ ${#started[@]} -gt 0 ] || return 0
  if [ -n "${WAYBILL_KEEP_INFRA:-}" ]; then
    log "WAYBILL_KEEP_INFRA is set: leaving ${started[*]} running"
  else
    "$WAYBILL_ROOT/scripts/infra" down "${started[@]}" || log "could not stop ${started[*]}"
  fi
}

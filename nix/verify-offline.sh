#!/usr/bin/env bash
# Offline check of the flake's *wiring*, with Debian's nix-bin (Nix 2.8) and
# the stub inputs in nix/offline-stubs/ (nixpkgs, rust-overlay, crane and,
# when needed, binjgb). Nothing real is compiled: it proves that every output
# exists for every system, that the source set, the app path, BINJGB_SRC and
# the checks are plumbed correctly, and that the stub builds, `nix run` and
# `nix develop` work. A real `nix flake check` still needs a networked machine
# with Nix >= 2.31.2 (crane's minimum).
#
# Usage: nix/verify-offline.sh        (from anywhere; no arguments)
#   BINJGB_SRC=/path/to/exported/binjgb nix/verify-offline.sh
#       uses that tree (a `git archive` of the locked rev) as the real binjgb
#       input instead of the stub; it must hash to the locked narHash.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
if [ -n "${BINJGB_SRC:-}" ] && [ -d "$BINJGB_SRC" ]; then
  BINJGB_SRC=$(cd "$BINJGB_SRC" && pwd -P) # it may be relative to the caller's directory
fi
cd "$repo"

# The locked binjgb input (flake.lock) and the store path its narHash implies.
BINJGB_REV=66d69e90b4c79ccc35a9a1976bca16093c44632e
BINJGB_NARHASH=sha256-VgiNaTB3AM292LlXph/KX8v+5dVwf5MubdPOUxUOcwU=
BINJGB_STORE_PATH=/nix/store/9dh7738h833q697h8m0wmw1f0k6il8wv-source

SYSTEMS=(x86_64-linux aarch64-linux x86_64-darwin aarch64-darwin)
STUBS=./nix/offline-stubs

fail() {
  echo "verify-offline: FAIL: $*" >&2
  exit 1
}
say() { echo "verify-offline: $*"; }

# --- 0. nix -------------------------------------------------------------------
if ! command -v nix >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    say "nix not found; installing Debian's nix-bin"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y nix-bin
  else
    fail "nix is not installed and this is not root; run 'apt-get update && apt-get install -y nix-bin' as root, then run this again"
  fi
fi
command -v nix >/dev/null 2>&1 || fail "nix is still not on PATH after installing nix-bin"
command -v python3 >/dev/null 2>&1 || fail "python3 is needed for the assertions"
say "$(nix --version)"

NIX=(nix --extra-experimental-features 'nix-command flakes')
if [ "$(id -u)" -ne 0 ] && [ ! -w /nix/var/nix/daemon-socket/socket ]; then
  # No daemon and no root: a store under $HOME (chroot store). Builds there
  # are sandboxed, so give the stub builders the host's /bin/sh and tools.
  NIX+=(--store "${XDG_CACHE_HOME:-$HOME/.cache}/flysim-nix-store"
    --option sandbox-paths "/bin /usr /lib /lib64")
  say "not root and no nix daemon: using the store ${NIX[4]}"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/flysim-nix-verify.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Run nix with its stderr in a log; print the log without Nix 2.8's chatter
# about overridden inputs; on failure print the whole log and stop.
#   nix_step LABEL STDOUT-FILE NIX-ARGS...
NOISE='^(warning: not writing modified lock file|• (Updated|Added) input|    '"'"'|  → '"'"'|evaluating )'
nix_step() {
  local label=$1 out=$2 rc=0
  shift 2
  "${NIX[@]}" "$@" >"$out" 2>"$work/stderr" || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$work/stderr" >&2
    fail "$label: nix exited with status $rc"
  fi
  grep -v -E "$NOISE" "$work/stderr" || [ "$?" -eq 1 ] # 1: every line was noise
}

# A git flake (`nix build .` on a real machine) sees tracked files only; this
# check uses path:, which sees everything. Say so when it matters.
if command -v git >/dev/null 2>&1 && git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  untracked=()
  for p in flake.nix flake.lock nix Cargo.lock rust-toolchain.toml compositions schemas fixtures docs; do
    if [ -e "$repo/$p" ] && [ -z "$(git -C "$repo" ls-files -- "$p" 2>/dev/null | head -n 1)" ]; then
      untracked+=("$p")
    fi
  done
  if [ "${#untracked[@]}" -gt 0 ]; then
    say "note: not tracked by git (a git flake, e.g. 'nix build .', will not see them until they are added): ${untracked[*]}"
  fi
fi

# --- 1. a copy of the project to check ----------------------------------------
# `path:.` copies and hashes the whole directory on every command, untracked
# files included; a cargo target/ would make that slow, so check a copy
# without .git, target/ and result links.
src="$work/src"
mkdir "$src"
tar -C "$repo" --exclude=./.git --exclude=./target --exclude=./result --exclude='./result-*' \
  --exclude=./.direnv -cf - . | tar -C "$src" -xf -
cd "$src"
say "checking a copy of $repo"

OV=(--offline
  --override-input nixpkgs "path:$STUBS/nixpkgs"
  --override-input rust-overlay "path:$STUBS/rust-overlay"
  --override-input crane "path:$STUBS/crane")

# --- 2. flake.lock ------------------------------------------------------------
python3 - "$BINJGB_REV" "$BINJGB_NARHASH" <<'PY' || fail "flake.lock is not as expected (see above)"
import json, sys
rev, narhash = sys.argv[1:3]
nodes = json.load(open("flake.lock"))["nodes"]
assert sorted(nodes["root"]["inputs"]) == ["binjgb", "crane", "nixpkgs", "rust-overlay"], nodes["root"]
gh = lambda owner, repo, **kw: dict(owner=owner, repo=repo, type="github", **kw)
want_binjgb = {
    "flake": False,
    "locked": gh("binji", "binjgb", rev=rev, narHash=narhash, lastModified=1740886278),
    "original": gh("binji", "binjgb", rev=rev),
}
assert nodes["binjgb"] == want_binjgb, ("binjgb lock entry", nodes["binjgb"])
for name, rev_, ref in [("nixpkgs", "104240a772428cc2e20d8fd86c9ddbb886bbaff2", "nixpkgs-unstable"),
                        ("rust-overlay", "292249772330735cb32b90dedf44feddec40e7d0", None),
                        ("crane", "10e6e3cb966f7cfcc789fe5eee7a85f3188ce08b", "v0.23.4")]:
    n = nodes[name]
    assert n["locked"]["type"] == "github" and n["locked"]["rev"] == rev_, (name, n["locked"])
    assert n["locked"]["narHash"].startswith("sha256-") and n["locked"]["lastModified"] > 0, (name, n["locked"])
    assert n["original"].get("ref") == ref, (name, n["original"])
assert nodes["rust-overlay"]["inputs"] == {"nixpkgs": ["nixpkgs"]}, nodes["rust-overlay"]
print("verify-offline: flake.lock: ok")
PY

# --- 3. binjgb ------------------------------------------------------------------
if "${NIX[@]}" path-info --offline "$BINJGB_STORE_PATH" >/dev/null 2>&1; then
  say "binjgb: the locked source $BINJGB_STORE_PATH is in the store"
  binjgb_expected=$BINJGB_STORE_PATH
elif [ -n "${BINJGB_SRC:-}" ]; then
  [ -d "$BINJGB_SRC" ] || fail "BINJGB_SRC=$BINJGB_SRC is not a directory"
  say "binjgb: adding BINJGB_SRC=$BINJGB_SRC to the store"
  added=$("${NIX[@]}" store add-path --name source "$BINJGB_SRC") ||
    fail "nix store add-path $BINJGB_SRC failed"
  if [ "$added" != "$BINJGB_STORE_PATH" ]; then
    fail "BINJGB_SRC gave $added ($("${NIX[@]}" hash path "$BINJGB_SRC")), not the locked $BINJGB_STORE_PATH ($BINJGB_NARHASH); it must be a plain 'git archive $BINJGB_REV' of binjgb"
  fi
  say "binjgb: $added matches the lock"
  binjgb_expected=$BINJGB_STORE_PATH
else
  say "binjgb: the locked binjgb source ($BINJGB_STORE_PATH) is not in the store and BINJGB_SRC is not set, so the stub $STUBS/binjgb is used"
  OV+=(--override-input binjgb "path:$STUBS/binjgb")
  binjgb_expected= # known after the inputs are resolved, below
fi

# --- 4. parse every .nix file -------------------------------------------------
count=0
while IFS= read -r -d '' f; do
  nix-instantiate --store dummy:// --parse "$f" >/dev/null || fail "$f does not parse"
  count=$((count + 1))
done < <(find . -name '*.nix' -type f -print0)
[ "$count" -ge 6 ] || fail "found only $count .nix files"
say "parse: ok ($count files)"

# --- 5. outputs ----------------------------------------------------------------
# (Evaluate before `flake check --no-build`: on Nix 2.8 that runs with a
# read-only store and fails on a source set that was never added.)
nix_step "flake show" "$work/show.json" flake show --json path:. "${OV[@]}"
nix_step "flake archive" "$work/inputs.json" flake archive --json --dry-run path:. "${OV[@]}"
for out in packages apps checks devShells; do
  nix_step "eval $out" "$work/$out.json" eval --json "path:.#$out" "${OV[@]}" --apply '
    let
      wanted = { BINJGB_SRC = 0; CARGO_PROFILE = 0; cargoClippyExtraArgs = 0; cargoNextestExtraArgs = 0; };
      info = v:
        if (v.type or null) == "derivation" then
          { path = v.outPath; attrs = builtins.intersectAttrs wanted v; } # (an attrset with outPath would print as that string)
        else
          { inherit (v) type program; description = v.meta.description or null; };
    in
    builtins.mapAttrs (system: builtins.mapAttrs (name: info))'
done

python3 - "$work" "$binjgb_expected" "${SYSTEMS[@]}" <<'PY' || fail "flake outputs are not as expected (see above)"
import json, os, sys
work, binjgb, systems = sys.argv[1], sys.argv[2], sys.argv[3:]
load = lambda name: json.load(open(os.path.join(work, name)))
show = load("show.json")
inputs = load("inputs.json")["inputs"]
ev = {k: load(k + ".json") for k in ("packages", "apps", "checks", "devShells")}
binjgb = binjgb or inputs["binjgb"]["path"]
errors = []
def check(cond, msg):
    if not cond:
        errors.append(msg)
want = {
    "packages": {"default", "flysim"},
    "apps": {"default", "flysim"},
    "checks": {"flysim", "flysim-clippy", "flysim-fmt", "flysim-nextest", "schemas-up-to-date"},
    "devShells": {"default"},
}
for out, names in want.items():
    check(set(show.get(out, {})) == set(systems), f"{out}: systems {sorted(show.get(out, {}))}")
for s in systems:
    for out, names in want.items():
        have = set(show.get(out, {}).get(s, {}))
        check(names <= have, f"{out}.{s}: missing {sorted(names - have)}")
        for n in names & have:
            kind = "app" if out == "apps" else "derivation"
            check(show[out][s][n].get("type") == kind, f"{out}.{s}.{n}: type {show[out][s][n].get('type')}, want {kind}")
    pk, ap, ck, sh = (ev[k].get(s, {}) for k in ("packages", "apps", "checks", "devShells"))
    try:
        flysim = pk["flysim"]["path"]
        check(pk["default"]["path"] == flysim, f"packages.{s}.default is not packages.{s}.flysim")
        check(pk["flysim"]["attrs"].get("BINJGB_SRC") == binjgb, f"packages.{s}.flysim: BINJGB_SRC {pk['flysim']['attrs'].get('BINJGB_SRC')}, want {binjgb}")
        for n in ("default", "flysim"):
            check(ap[n]["type"] == "app", f"apps.{s}.{n}.type")
            check(ap[n]["program"] == flysim + "/bin/flysim", f"apps.{s}.{n}.program = {ap[n]['program']}, want {flysim}/bin/flysim")
            check(bool(ap[n]["description"]), f"apps.{s}.{n} has no meta.description")
        check(ck["flysim"]["path"] == flysim, f"checks.{s}.flysim is not the package")
        clippy = ck["flysim-clippy"]["attrs"]
        check(clippy.get("cargoClippyExtraArgs") == "--all-targets -- --deny warnings", f"checks.{s}.flysim-clippy: cargoClippyExtraArgs {clippy.get('cargoClippyExtraArgs')!r}")
        nextest = ck["flysim-nextest"]["attrs"]
        check(nextest.get("CARGO_PROFILE") == "", f"checks.{s}.flysim-nextest: CARGO_PROFILE {nextest.get('CARGO_PROFILE')!r}, want ''")
        check("--no-tests=fail" in (nextest.get("cargoNextestExtraArgs") or "").split(), f"checks.{s}.flysim-nextest: no --no-tests=fail")
        for n in ("flysim-clippy", "flysim-nextest"):
            check(ck[n]["attrs"].get("BINJGB_SRC") == binjgb, f"checks.{s}.{n}: BINJGB_SRC {ck[n]['attrs'].get('BINJGB_SRC')}")
        check(sh["default"]["attrs"].get("BINJGB_SRC") == binjgb, f"devShells.{s}.default: BINJGB_SRC {sh['default']['attrs'].get('BINJGB_SRC')}, want {binjgb}")
    except (KeyError, TypeError) as e:
        errors.append(f"{s}: missing {e!r}")
for e in errors:
    print("verify-offline: outputs:", e, file=sys.stderr)
if errors:
    sys.exit(1)
print(f"verify-offline: outputs: ok ({len(systems)} systems, binjgb = {binjgb})")
open(os.path.join(work, "binjgb"), "w").write(binjgb)
PY
binjgb_expected=$(cat "$work/binjgb")

# --- 6. flake check -------------------------------------------------------------
nix_step "flake check --no-build" /dev/null flake check --no-build path:. "${OV[@]}"
say "flake check --no-build: ok"
nix_step "flake check" /dev/null flake check path:. "${OV[@]}"
say "flake check: ok"

# --- 7. nix run ---------------------------------------------------------------
nix_step "nix run" "$work/run.out" run "path:.#flysim" "${OV[@]}" -- compositions/gameboy.kdl
cat "$work/run.out"
grep -qxF "stub flysim called with: compositions/gameboy.kdl" "$work/run.out" ||
  fail "nix run: the stub flysim did not report its arguments"
grep -qxF "BINJGB_SRC at build time was: $binjgb_expected" "$work/run.out" ||
  fail "nix run: the package was not built with BINJGB_SRC=$binjgb_expected"

# --- 8. nix develop -------------------------------------------------------------
# shellcheck disable=SC2016 # $BINJGB_SRC is expanded inside the dev shell
# (TMPDIR: nix develop leaves a nix-shell.* directory behind in it)
TMPDIR=$work nix_step "nix develop" "$work/develop.out" develop path:. "${OV[@]}" \
  -c sh -c 'test -n "$BINJGB_SRC" && test -d "$BINJGB_SRC" && printf "%s\n" "$BINJGB_SRC"'
[ "$(cat "$work/develop.out")" = "$binjgb_expected" ] ||
  fail "nix develop: BINJGB_SRC is '$(cat "$work/develop.out")', want $binjgb_expected"
say "devShell: BINJGB_SRC=$binjgb_expected"

echo "nix wiring check: ok"

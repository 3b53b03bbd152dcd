#!/usr/bin/env bash
# By-hand fidelity check (not a test: it reads files outside the repo). With the reference prompt
# texts as --prompts-dir, `harness-proxy rewrite` must reproduce the reference example bodies.
#
#   scripts/check-reference.sh REFERENCE_DIR
#
# REFERENCE_DIR is kept outside the repository, so name it: it holds the reference's prompt
# texts (REFERENCE_DIR/prompts/) and example bodies (REFERENCE_DIR/examples/, the files
# opencode_request.linux.json and opencode_title_request.json).
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: scripts/check-reference.sh REFERENCE_DIR" >&2
  exit 2
fi
ref=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
cargo build --quiet
bin=target/debug/harness-proxy
request=$(mktemp)
trap 'rm -f "$request"' EXIT
cat >"$request" <<'JSON'
{"model":"mock-model","messages":[
 {"role":"system","content":"You are a coding agent."},
 {"role":"developer","content":"<skills_instructions>\n## Skills\n...\n</skills_instructions>"},
 {"role":"user","content":"Run the QA pass\nthen report"}]}
JSON
export HARNESS_PROXY__OPENCODE__TOOLS=reference HARNESS_PROXY__OPENCODE__TODAY="Sat Nov 29 2025" \
  HARNESS_PROXY__OPENCODE__PLATFORM=linux HARNESS_PROXY__OPENCODE__IDENTITY=reference \
  HARNESS_PROXY__OPENCODE__INSTRUCTIONS=drop
# The reference texts may use single-brace placeholders; the project's one template syntax is {{ }}.
# Only a lone {name} is doubled: a text already in {{name}} is left as it is.
prompts=$(mktemp -d)
trap 'rm -rf "$request" "$prompts"' EXIT
cp -r "$ref/prompts/." "$prompts/"
sed -i -E 's/(^|[^{])\{(os|shell|temp_dir|timeout_description|cwd)\}($|[^}])/\1{{\2}}\3/g' \
  "$prompts/opencode/tools.json" "$prompts/opencode/skills.md"
args=(rewrite --harness opencode --header "x-harness-cwd: /home/user/project" --prompts-dir "$prompts")
status=0
for kind in main title; do
  if [ "$kind" = main ]; then
    expected="$ref/examples/opencode_request.linux.json"; extra=()
  else
    expected="$ref/examples/opencode_title_request.json"; extra=(--title)
  fi
  if cmp -s <("$bin" "${args[@]}" "${extra[@]}" <"$request" | tr -d '\n') <(tr -d '\n' <"$expected"); then
    echo "$kind: byte-identical to $(basename "$expected")"
  else
    echo "$kind: DIFFERS from $(basename "$expected")"; status=1
  fi
done
exit $status

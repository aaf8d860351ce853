#!/bin/sh
# Print the path of a Python interpreter of the given minor version ("3.13" or "3.11"), or say what to install.
# Looks for pythonX.Y on PATH (a real interpreter, not a pyenv shim without that version), then pyenv's versions.
want="$1"
for cand in "python$want" python3; do
    out=$("$cand" -c 'import sys; print(sys.executable) if "%d.%d" % sys.version_info[:2] == sys.argv[1] else sys.exit(1)' "$want" 2>/dev/null) && { echo "$out"; exit 0; }
done
if command -v pyenv >/dev/null 2>&1; then
    for ver in $(pyenv versions --bare 2>/dev/null | grep -E "^$want(\.[0-9]+)?$" | sort -t. -k3 -n -r); do
        exe="$(pyenv root)/versions/$ver/bin/python$want"
        [ -x "$exe" ] && { echo "$exe"; exit 0; }
    done
fi
echo "error: no Python $want found (looked for python$want and python3 on PATH, and pyenv's versions)." >&2
echo "error: install Python $want (e.g. 'pyenv install $want', or your system's python$want package) and rerun." >&2
exit 1

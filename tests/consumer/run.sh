#!/usr/bin/env bash
# Installs the build in $1 into a scratch prefix, then configures, builds and runs the project
# that docs/using-athanor.md shows (its ```cmake and ```cpp blocks, extracted here) against it
# with find_package(athanor): the page is what is tested.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
doc="$here/../../docs/using-athanor.md"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# The installed command line finds the installed library through its RPATH.
if [ -x "$work/prefix/bin/athanor" ]; then
  "$work/prefix/bin/athanor" --version >/dev/null
fi
mkdir "$work/src"
awk '/^```cmake$/{f=1; next} /^```$/{f=0} f' "$doc" > "$work/src/CMakeLists.txt"
awk '/^```cpp$/{f=1; next} /^```$/{f=0} f' "$doc" > "$work/src/main.cpp"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/build/my_model"

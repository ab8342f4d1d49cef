#!/bin/sh
# Installs hos's C ABI into PREFIX: builds the release library with cargo, then copies
#   PREFIX/lib/libhos.a, PREFIX/lib/libhos.so
#   PREFIX/include/hos.h, PREFIX/include/hos.hpp
#   PREFIX/lib/pkgconfig/hos.pc                 (pkg-config --cflags --libs hos)
#   PREFIX/lib/cmake/hos/hosConfig.cmake        (find_package(hos), target hos::hos)
#   PREFIX/lib/cmake/hos/hosConfigVersion.cmake
#
#   capi/install.sh /usr/local
#   capi/install.sh "$HOME/.local"
#
# CARGO (default: cargo) and CARGO_TARGET_DIR (default: the repository's target/) are
# honoured. capi/tests/install.rs installs into a temporary prefix and builds a host against
# it both ways.
set -eu

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 PREFIX" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
prefix=$(cd "$1" && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/capi/Cargo.toml" | head -n 1)
if [ -z "$version" ]; then
    echo "$0: no version in capi/Cargo.toml" >&2
    exit 1
fi

(cd "$root" && "${CARGO:-cargo}" build --release --quiet -p hos-capi --lib --target-dir "$target")

mkdir -p "$prefix/lib/pkgconfig" "$prefix/lib/cmake/hos" "$prefix/include"
cp "$target/release/libhos.a" "$target/release/libhos.so" "$prefix/lib/"
cp "$root/include/hos.h" "$root/include/hos.hpp" "$prefix/include/"
# '|' as sed's separator: a prefix is a path; one with '|', '&' or a newline is refused.
case "$prefix" in
*'|'* | *'&'* | *'
'*)
    echo "$0: the prefix $prefix has a character sed cannot take ('|', '&', a newline)" >&2
    exit 1
    ;;
esac
sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" \
    "$root/capi/pkg/hos.pc.in" >"$prefix/lib/pkgconfig/hos.pc"
cp "$root/capi/pkg/hosConfig.cmake" "$prefix/lib/cmake/hos/"
sed -e "s|@VERSION@|$version|g" \
    "$root/capi/pkg/hosConfigVersion.cmake.in" >"$prefix/lib/cmake/hos/hosConfigVersion.cmake"

echo "hos $version installed into $prefix"
echo "  pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs hos"
echo "  CMake:      -DCMAKE_PREFIX_PATH=$prefix, find_package(hos), target hos::hos"

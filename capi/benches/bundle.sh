#!/usr/bin/env bash
# Makes DIR, a bundle of capi/benches/abi.rs that runs on another x86_64 Linux without cargo,
# cc or a matching C library: the bench's executable, libhos.so, checkpoint.c linked static
# against libhos.a, and in DIR/lib the dynamic loader and the libraries the first two need,
# stripped. DIR/run runs it there (its arguments go to the bench, e.g. --bench pingpong).
# Usage: capi/benches/bundle.sh DIR (from anywhere in the checkout).
set -euo pipefail
dir=${1:?usage: capi/benches/bundle.sh DIR}
cd "$(dirname "$0")/../.."
cargo build --release -p hos-capi --lib
exe=$(cargo bench -p hos-capi --bench abi --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
test -x "$exe"
mkdir -p "$dir/lib"
cp "$exe" "$dir/abi"
cp target/release/libhos.so "$dir/"
cc -std=c11 -O2 -pthread -static -Iinclude capi/benches/checkpoint.c target/release/libhos.a \
    -lm -o "$dir/checkpoint-bench" 2>/dev/null
for f in "$dir/abi" "$dir/libhos.so"; do
    ldd "$f" | awk '/=> \//{print $3} /ld-linux/ && !/=>/{print $1}'
done | sort -u | xargs -I{} cp -L {} "$dir/lib/"
strip "$dir/abi" "$dir/libhos.so" "$dir/checkpoint-bench"
cat > "$dir/run" <<'RUN'
#!/bin/sh
# Runs the bundled bench through the bundled loader and libraries; arguments go to it.
here=$(cd "$(dirname "$0")" && pwd)
HOS_BENCH_PREBUILT=$here exec "$here/lib/ld-linux-x86-64.so.2" --library-path "$here/lib" \
    "$here/abi" "$@"
RUN
chmod +x "$dir/run"
du -sh "$dir"

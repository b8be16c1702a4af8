#!/usr/bin/env bash
# Writes seed inputs for the fuzz targets into fuzz/corpus/<target>/ (gitignored), built only
# from the checked-in golden frames in fixtures/*.bin (see fixtures/README.md). Idempotent.
#
#   frame_decoder  each fixture alone, and all valid fixtures as one stream
#   server_stream  one selector byte (handler = byte % 3, max_frame_bytes = [1 MiB, 4096, 100]
#                  at byte / 3 % 3), then a client stream:
#                  - hello_client.bin alone                            (clean end of stream)
#                  - hello_client.bin, every data_*.bin, bye.bin       (a whole conversation)
#                  - each fixture as the first frame                   (no HELLO)
#                  - hello_client.bin, data_f64_special.bin, FIXTURE   (every fixture mid-stream)
#   parts_table    the payload of every PARTS fixture, valid and malformed
set -euo pipefail
cd "$(dirname "$0")"
fixtures=../fixtures
decoder=corpus/frame_decoder
server=corpus/server_stream
mkdir -p "$decoder" "$server"

for f in "$fixtures"/*.bin; do
    cp "$f" "$decoder/$(basename "$f" .bin)"
done
cat "$fixtures"/hello_client.bin "$fixtures"/data_*.bin "$fixtures"/error_wrong_dtype.bin \
    "$fixtures"/bye.bin >"$decoder/all_valid_stream"

# seed NAME SELECTOR FILE...: the selector byte, then the files.
seed() {
    local name=$1 selector=$2
    shift 2
    { printf "\\$(printf '%03o' "$selector")"; cat "$@"; } >"$server/$name-$selector"
}
for selector in 0 1 2 3 4 5 6 7 8; do
    seed conversation "$selector" "$fixtures"/hello_client.bin "$fixtures"/data_*.bin \
        "$fixtures"/bye.bin
done
for selector in 0 1 2; do
    seed hello_only "$selector" "$fixtures"/hello_client.bin
    for f in "$fixtures"/*.bin; do
        name=$(basename "$f" .bin)
        seed "first_$name" "$selector" "$f"
        seed "after_data_$name" "$selector" "$fixtures"/hello_client.bin \
            "$fixtures"/data_f64_special.bin "$f"
    done
done
# parts_table: the payload of every PARTS fixture, valid and malformed (the header cut off).
parts=corpus/parts_table
mkdir -p "$parts"
for f in "$fixtures"/parts_*.bin "$fixtures"/bad_parts_*.bin; do
    tail -c +33 "$f" >"$parts/$(basename "$f" .bin)"
done
echo "seeds: $(ls "$decoder" | wc -l) in $decoder, $(ls "$server" | wc -l) in $server," \
    "$(ls "$parts" | wc -l) in $parts"

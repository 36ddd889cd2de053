# docs.sh -- generate the benchmark document set (sourced, bash).
#
#   make_docroot DIR   creates DIR with deterministic files:
#   warm_docroot PORT  GETs each of them once from a server on 127.0.0.1:PORT
#                      (its file cache and the page cache), before measuring
#     f2k   2,048 B      workloads b, c (and the idle-connection helper)
#     f12k  12,500 B     workload a (the CoW paper's file) and b, e
#     f64k  65,536 B     workload b
#     m500  500 B   \
#     m5k   5,120 B  |   workload d: the WebSTONE file mix of the JAWS paper
#     m50k  51,200 B |   (500 B 35 %, 5 KB 50 %, 50 KB 14 %, 5 MB 1 %;
#     m5m   5 MiB   /    K and M taken as 1024 and 1024*1024)
# Content is a repeated ASCII line, so every run and every server serves
# byte-identical files.

DOC_FILES="f2k:2048 f12k:12500 f64k:65536 m500:500 m5k:5120 m50k:51200 m5m:5242880"

make_docroot() {
    local dir=$1 spec name size
    mkdir -p "$dir"
    chmod 755 "$dir"
    for spec in $DOC_FILES; do
        name=${spec%%:*} size=${spec#*:}
        yes 'cowd benchmark document: the quick brown fox jumps over the lazy dog 0123456789' \
            | head -c "$size" >"$dir/$name"
        chmod 644 "$dir/$name"
    done
}

warm_docroot() {
    local spec
    for spec in $DOC_FILES; do
        curl -s -o /dev/null -m 5 "http://127.0.0.1:$1/${spec%%:*}" || true
    done
}

# The WebSTONE mix as PATH:WEIGHT pairs for bench.lua (weights in percent).
MIX_SPEC="/m500:35,/m5k:50,/m50k:14,/m5m:1"

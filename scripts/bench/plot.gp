# plot.gp -- the suite's charts. Run as: gnuplot -e "dir='OUT'" plot.gp
# Needs OUT/plotvars.gp, OUT/sweep-*.dat and OUT/bars*.dat from report.py.
#   a-replies.png   replies/s vs offered connection rate (CoW paper, Fig. 5)
#   a-latency.png   average reply time vs offered rate   (CoW paper, Fig. 6)
#   bars.png        replies/s per server, workloads b-f
#   bars-eff.png    replies per server-CPU-second, workloads b-f

load dir.'/plotvars.gp'

set terminal pngcairo size 960,600 enhanced font 'DejaVu Sans,11'
set grid ytics lc rgb '#dddddd'
set key top left box opaque
set border lw 1.2
# one colour and point type per server, whichever servers ran
scol(s) = (s eq 'cowd') ? '#d62728' : (s eq 'nginx') ? '#1f77b4' : \
          (s eq 'lighttpd') ? '#2ca02c' : (s eq 'h2o') ? '#9467bd' : '#ff7f0e'
spt(s)  = (s eq 'cowd') ? 7 : (s eq 'nginx') ? 5 : (s eq 'lighttpd') ? 9 : \
          (s eq 'h2o') ? 11 : 13
set style line 9 lc rgb '#777777' lw 1.5 dt 2

if (strlen(sweep_servers) > 0) {
    set output dir.'/a-replies.png'
    set title "(a) 12,500-byte file, HTTP/1.1, 5 requests per connection (httperf)\nreplies per second vs offered load (cf. CoW paper Fig. 5) [".mode."]"
    set xlabel 'offered load (new connections / s)'
    set ylabel 'successful replies / s'
    set format y '%.0f'
    set xrange [0:*]
    set yrange [0:*]
    plot for [i=1:words(sweep_servers)] dir.'/sweep-'.word(sweep_servers,i).'.dat' \
            using 1:2 with linespoints lw 2 ps 1.2 lc rgb scol(word(sweep_servers,i)) \
            pt spt(word(sweep_servers,i)) title word(sweep_servers,i), \
         5*x with lines ls 9 title 'ideal (5 x rate)'

    set output dir.'/a-latency.png'
    set title "(a) 12,500-byte file, 5 requests per connection (httperf)\naverage reply time vs offered load (cf. CoW paper Fig. 6) [".mode."]"
    set ylabel 'average reply time (ms, log scale)'
    set logscale y
    set format y '%g'
    set yrange [*:*]
    plot for [i=1:words(sweep_servers)] dir.'/sweep-'.word(sweep_servers,i).'.dat' \
            using 1:3 with linespoints lw 2 ps 1.2 lc rgb scol(word(sweep_servers,i)) \
            pt spt(word(sweep_servers,i)) title word(sweep_servers,i)
    unset logscale y
}

if (have_bars) {
    set datafile missing '?'
    set style data histograms
    set style histogram clustered gap 1
    set style fill solid 0.85 border -1
    set boxwidth 0.9
    set xtics norotate nomirror
    set xrange [*:*]
    set yrange [0:*]
    set xlabel 'workload:file'
    set format y '%.0f'
    set key outside top center horizontal

    set output dir.'/bars.png'
    set title "Throughput per server, workloads b-f (wrk) [".mode."]"
    set ylabel 'successful replies / s'
    plot for [i=1:words(bar_servers)] dir.'/bars.dat' using (column(i+1)):xtic(1) \
         lc rgb scol(word(bar_servers,i)) title word(bar_servers,i)

    set output dir.'/bars-eff.png'
    set title "Efficiency: replies per server-CPU-second, workloads b-f [".mode."]"
    set ylabel 'replies / server CPU-second'
    plot for [i=1:words(bar_servers)] dir.'/bars-eff.dat' using (column(i+1)):xtic(1) \
         lc rgb scol(word(bar_servers,i)) title word(bar_servers,i)
}

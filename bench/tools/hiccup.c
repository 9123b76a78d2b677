/* hiccup: how long this machine takes a running thread away from it.
 *
 * Spins reading CLOCK_MONOTONIC for the given seconds and reports the longest gap between two
 * consecutive reads, and how many gaps exceeded 100 us .. 2 ms. On an idle core every gap
 * should be well under a microsecond; anything longer is the kernel or, in a VM, the host
 * running something else (docs/performance.md, "updaterandom's Max: the machine's own
 * hiccups"). Run one copy per core to see what a workload that keeps every core busy sees.
 *
 *   cc -O2 -o /tmp/hiccup bench/tools/hiccup.c && /tmp/hiccup 10
 *   /tmp/hiccup 10 & /tmp/hiccup 10; wait
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 10.0;
  const long long limits[] = {100000, 250000, 500000, 1000000, 2000000};
  long long counts[5] = {0}, longest = 0;
  long long prev = now_ns(), end = prev + (long long)(secs * 1e9);
  for (;;) {
    long long t = now_ns(), gap = t - prev;
    prev = t;
    if (t > end) break;
    if (gap > longest) longest = gap;
    for (int i = 0; i < 5; i++) counts[i] += gap > limits[i];
  }
  printf("%.0f s: longest gap %.1f us; gaps >100us %lld, >250us %lld, >500us %lld, >1ms %lld, >2ms %lld\n",
         secs, longest / 1000.0, counts[0], counts[1], counts[2], counts[3], counts[4]);
  return 0;
}

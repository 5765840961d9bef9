/*
 * jsonscan-bench: the time eoi_json_scan_object() (src/format/jsonscan.c)
 * takes per message, for the messages of a file, one per line: the
 * scanner alone, without the server around it, where differences of a
 * few percent in the ingest rate are lost in the noise of a shared
 * machine.
 *
 *   cc -O2 -I src -o /tmp/jsonscan-bench bench/tools/jsonscan-bench.c src/format/jsonscan.c
 *   kcat -b BROKERS -C -t TOPIC -c 200 -e -f '%s\n' > /tmp/messages.txt
 *   /tmp/jsonscan-bench /tmp/messages.txt
 *
 * Each of the first 1,000 lines is scanned 5,000 times, seven times over;
 * the fastest of the seven is printed, in nanoseconds per message.  A line
 * the scan declines is an error.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "format/jsonscan.h"

#define MAX_LINES 1000
#define ITERATIONS 5000
#define REPEATS 7

static bool
take(void *arg, const char *key, size_t key_len, const EoiJsonToken *value)
{
	*(size_t *) arg += key_len + value->len;
	return true;
}

int
main(int argc, char **argv)
{
	FILE	   *f;
	char	   *lines[MAX_LINES];
	size_t		lens[MAX_LINES];
	size_t		longest = 1;
	int			n = 0;
	char	   *line = NULL;
	size_t		cap = 0;
	ssize_t		len;
	char	   *scratch;
	size_t		sink = 0;
	double		best = 0;

	if (argc != 2 || (f = fopen(argv[1], "r")) == NULL)
	{
		fprintf(stderr, "usage: jsonscan-bench FILE (one JSON object per line)\n");
		return 2;
	}
	while (n < MAX_LINES && (len = getline(&line, &cap, f)) > 0)
	{
		if (line[len - 1] == '\n')
			len--;
		lines[n] = malloc(len);
		memcpy(lines[n], line, len);
		lens[n++] = (size_t) len;
		if ((size_t) len > longest)
			longest = (size_t) len;
	}
	if (n == 0)
	{
		fprintf(stderr, "jsonscan-bench: no lines in %s\n", argv[1]);
		return 2;
	}
	scratch = malloc(longest);
	for (int r = 0; r < REPEATS; r++)
	{
		struct timespec a,
					b;
		double		t;

		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int it = 0; it < ITERATIONS; it++)
			for (int i = 0; i < n; i++)
				if (!eoi_json_scan_object(lines[i], lens[i], scratch, true, take, &sink))
				{
					fprintf(stderr, "jsonscan-bench: line %d declined\n", i + 1);
					return 1;
				}
		clock_gettime(CLOCK_MONOTONIC, &b);
		t = (double) (b.tv_sec - a.tv_sec) + (double) (b.tv_nsec - a.tv_nsec) / 1e9;
		if (r == 0 || t < best)
			best = t;
	}
	printf("%s: %d messages, %.1f ns per message (the fastest of %d rounds; %zu)\n",
		   argv[1], n, best * 1e9 / ((double) ITERATIONS * n), REPEATS, sink % 2);
	return 0;
}

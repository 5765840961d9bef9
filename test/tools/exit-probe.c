/*
 * exit-probe.so: preloaded into the test server by test/t/68-exit-threads.t.
 *
 * Its constructor runs in the postmaster before any library of the server
 * registers an atexit handler (OpenSSL's cleanup among them), so the
 * handler it registers, which every child inherits, runs last when a
 * child exits: then it reports a process that still has threads besides
 * its own (a Kafka client never destroyed), which a PostgreSQL process has
 * at no other time.  One line on stderr (the server log) per such exit.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int
count_threads(void)
{
	DIR		   *dir = opendir("/proc/self/task");
	struct dirent *entry;
	int			n = 0;

	if (dir == NULL)
		return -1;
	while ((entry = readdir(dir)) != NULL)
		if (entry->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

/* The process title PostgreSQL set ("postgres: eoingest worker ..."). */
static void
read_title(char *buf, size_t cap)
{
	int			fd = open("/proc/self/cmdline", O_RDONLY);
	ssize_t		len = fd < 0 ? -1 : read(fd, buf, cap - 1);

	if (fd >= 0)
		close(fd);
	if (len < 0)
		len = 0;
	buf[len] = '\0';
	for (ssize_t i = 0; i < len; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
}

static void
report_threads(void)
{
	int			n = count_threads();
	char		title[256];

	if (n <= 1)
		return;
	read_title(title, sizeof(title));
	fprintf(stderr, "exit-probe: process %d exits with %d threads still running: %s\n",
			(int) getpid(), n, title);
}

__attribute__((constructor))
static void
probe_init(void)
{
	atexit(report_threads);
}

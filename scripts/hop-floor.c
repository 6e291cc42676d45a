/*
 * The floor of a synchronous request on this machine: what a server that does no work costs
 * when it runs in its own process, alone (a client's request and reply: two process wake-ups)
 * and as the leader of three (the request, a proposal to two followers, the first ack, the
 * reply and a commit: four wake-ups in series). meerkat's standalone and leader p50 are
 * compared with these in docs/perf.md. Built and run by scripts/hop-floor.sh.
 *
 * Every process blocks in read() as a server blocks in epoll_wait(): what is measured is the
 * kernel's loopback path plus waking a sleeping process, per hop.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { REQUEST = 300, REPLY = 50, PROPOSAL = 320, ACK = 20, WARMUP = 2000 };

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void read_full(int fd, char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0) exit(0); /* the other side is gone: the run is over */
        got += (size_t)r;
    }
}

static void write_full(int fd, const char *buf, size_t n) {
    size_t put = 0;
    while (put < n) {
        ssize_t w = write(fd, buf + put, n - put);
        if (w <= 0) exit(0);
        put += (size_t)w;
    }
}

static int listener(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 4)) die("listen");
    if (getsockname(fd, (struct sockaddr *)&a, &len)) die("getsockname");
    *port = ntohs(a.sin_port);
    return fd;
}

static int nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) die("connect");
    return nodelay(fd);
}

/* A follower: acks each proposal, takes commits without a word. */
static void follower(int lfd) {
    int fd = nodelay(accept(lfd, NULL, NULL));
    char msg[PROPOSAL], ack[ACK] = {0};
    for (;;) {
        read_full(fd, msg, PROPOSAL);
        if (msg[0] == 'P') write_full(fd, ack, ACK);
    }
}

/* The leader of two followers: a request is answered once one follower acked its proposal
 * (with the leader, a quorum of three); then both get the commit. */
static void leader(int lfd, int f1, int f2) {
    int fd = nodelay(accept(lfd, NULL, NULL));
    char req[REQUEST], reply[REPLY] = {0}, prop[PROPOSAL] = {0}, ack[ACK];
    long acked[2] = {0, 0}, sent = 0;
    int fs[2] = {f1, f2};
    for (;;) {
        read_full(fd, req, REQUEST);
        prop[0] = 'P';
        write_full(f1, prop, PROPOSAL);
        write_full(f2, prop, PROPOSAL);
        sent++;
        while (acked[0] < sent && acked[1] < sent) {
            struct pollfd p[2] = {{f1, POLLIN, 0}, {f2, POLLIN, 0}};
            if (poll(p, 2, -1) < 0) die("poll");
            for (int i = 0; i < 2; i++)
                if (p[i].revents & POLLIN) {
                    read_full(fs[i], ack, ACK);
                    acked[i]++;
                }
        }
        write_full(fd, reply, REPLY);
        prop[0] = 'C';
        write_full(f1, prop, PROPOSAL);
        write_full(f2, prop, PROPOSAL);
    }
}

static void echo(int lfd) {
    int fd = nodelay(accept(lfd, NULL, NULL));
    char req[REQUEST], reply[REPLY] = {0};
    for (;;) {
        read_full(fd, req, REQUEST);
        write_full(fd, reply, REPLY);
    }
}

static int cmp(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "standalone") && strcmp(argv[1], "leader"))) {
        fprintf(stderr, "usage: %s standalone|leader REQUESTS\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]);
    if (n < 1 || n > 10000000) {
        fprintf(stderr, "REQUESTS: 1 to 10000000\n");
        return 2;
    }
    pid_t children[3];
    int count = 0, port;
    int lfd = listener(&port);
    if (!strcmp(argv[1], "standalone")) {
        if ((children[count++] = fork()) == 0) echo(lfd);
    } else {
        int p1, p2;
        int l1 = listener(&p1), l2 = listener(&p2);
        if ((children[count++] = fork()) == 0) follower(l1);
        if ((children[count++] = fork()) == 0) follower(l2);
        if ((children[count++] = fork()) == 0) leader(lfd, dial(p1), dial(p2));
    }
    int fd = dial(port);
    char req[REQUEST] = {0}, reply[REPLY];
    long *lat = malloc(sizeof(long) * (size_t)n);
    if (!lat) die("malloc");
    for (long i = -WARMUP; i < n; i++) {
        long t0 = now_ns();
        write_full(fd, req, REQUEST);
        read_full(fd, reply, REPLY);
        if (i >= 0) lat[i] = now_ns() - t0;
    }
    close(fd);
    for (int i = 0; i < count; i++) {
        kill(children[i], SIGTERM);
        waitpid(children[i], NULL, 0);
    }
    qsort(lat, (size_t)n, sizeof(long), cmp);
    printf("%s requests=%ld p50_us=%.1f p99_us=%.1f\n", argv[1], n, lat[n / 2] / 1000.0,
           lat[n * 99 / 100] / 1000.0);
    return 0;
}

/* The least a server can do for a 4 KiB GET: one thread per connection,
 * read a request head, write a fixed 4 KiB response from memory. Used by
 * p99-limit.sh as the floor of "p99 of a 4 KiB request while 4 clients
 * download 1 GiB files" on this machine: no parsing, no files, no queues,
 * only the wake-ups every server needs. */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char response[4096 + 128];
static size_t response_len;

static void *serve(void *arg) {
    int fd = (int)(long)arg;
    char buf[8192];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - have);
        if (n <= 0) break;
        have += (size_t)n;
        /* Answer every whole head in the buffer (wrk sends one at a time). */
        for (;;) {
            char *end = memmem(buf, have, "\r\n\r\n", 4);
            if (!end) break;
            size_t used = (size_t)(end + 4 - buf);
            if (write(fd, response, response_len) != (ssize_t)response_len) goto out;
            memmove(buf, buf + used, have - used);
            have -= used;
        }
        if (have == sizeof buf) break;
    }
out:
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 18099;
    response_len = (size_t)snprintf(response, 128,
        "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\nConnection: keep-alive\r\n\r\n");
    memset(response + response_len, 'x', 4096);
    response_len += 4096;
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) || listen(listener, 128)) {
        perror("bind/listen");
        return 1;
    }
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) continue;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t thread;
        pthread_create(&thread, NULL, serve, (void *)(long)fd);
        pthread_detach(thread);
    }
}

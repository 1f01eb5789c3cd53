#ifndef CFLOOR_H
#define CFLOOR_H

// What reconnect-floor needs from Linux that Swift's Glibc module does not bring: epoll and accept4.

#include <sys/epoll.h>
#include <sys/socket.h>

/// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC and no peer address.
int cfloor_accept(int fd);

#endif

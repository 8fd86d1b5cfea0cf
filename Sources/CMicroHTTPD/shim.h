#ifndef REGISTRYD_CMICROHTTPD_SHIM_H
#define REGISTRYD_CMICROHTTPD_SHIM_H

/*
 * Swift cannot call C-variadic functions, so the variadic entry points of
 * libmicrohttpd that the HTTPServer module needs are wrapped here with
 * fixed parameter lists.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/** The URI log callback; its result becomes `*con_cls` of the request's first access-handler call. */
typedef void *(*registryd_uri_log_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

/**
 * Starts a daemon bound to `address` with the options HTTPServer relies on.
 * `pool_size` below 2 runs a single polling thread (no worker pool);
 * `per_ip_limit` 0 means no per-IP limit. Every callback receives `cls`.
 */
static inline struct MHD_Daemon *
registryd_mhd_start(unsigned int flags, uint16_t port, const struct sockaddr *address,
                    MHD_AccessHandlerCallback access_handler,
                    MHD_RequestCompletedCallback completed,
                    MHD_NotifyConnectionCallback connection_notify,
                    registryd_uri_log_callback uri_log,
                    void *cls,
                    unsigned int pool_size, unsigned int connection_limit,
                    unsigned int per_ip_limit, unsigned int timeout_seconds,
                    size_t memory_limit)
{
    return MHD_start_daemon(flags, port, NULL, NULL, access_handler, cls,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                            MHD_OPTION_NOTIFY_CONNECTION, connection_notify, cls,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, cls,
                            MHD_OPTION_THREAD_POOL_SIZE, pool_size < 2 ? 0u : pool_size,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_END);
}

/** The port the daemon listens on (useful after binding port 0), or 0 when unknown. */
static inline uint16_t
registryd_mhd_bound_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/** The connection's socket, or -1 when unknown. Valid from the STARTED to the CLOSED connection notice. */
static inline int
registryd_mhd_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/** The connection's socket context: what the STARTED connection notice stored, or NULL. */
static inline void *
registryd_mhd_socket_context(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

#endif

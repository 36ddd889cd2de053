/* spawn.c: starting the server's own long-lived Pth threads (depot, park,
 * accept, signal, drain and log-flush threads) with one set of attributes. */
#include "spawn.h"

pth_t spawn_detached(const char *name, size_t stack, void *(*fn)(void *), void *arg)
{
    pth_attr_t attr = pth_attr_new();
    if (attr == NULL)
        return NULL;
    pth_attr_set(attr, PTH_ATTR_JOINABLE, FALSE);
    pth_attr_set(attr, PTH_ATTR_NAME, name);
    if (stack != 0)
        pth_attr_set(attr, PTH_ATTR_STACK_SIZE, (unsigned int)stack);
    pth_t t = pth_spawn(attr, fn, arg);
    pth_attr_destroy(attr);
    return t;
}

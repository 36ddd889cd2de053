/* mime.c: the extension -> media type table (open addressing, built once at
 * startup, read without locks or allocation on the request path). */
#include "mime.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"

#define MIME_EXT_MAX 16

struct mime_entry {
    char ext[MIME_EXT_MAX];         /* lower case, NUL-terminated; "" = empty slot */
    const char *type;
};

static struct mime_entry *table;
static size_t table_size;           /* power of two */
static size_t n_entries;
static char *types_blob;            /* all type strings of the current table */

static const char default_type[] = "application/octet-stream";

/* RFC 6838 §4.2: type "/" subtype, each 1-127 characters of a restricted set; the
 * RFC 9110 token characters are checked here (a superset), which is what keeps a
 * Content-Type header well formed whatever the file says. */
static int valid_type(const char *t)
{
    static const char tchar_punct[] = "!#$%&'*+-.^_`|~";
    size_t part = 0;
    int slashes = 0;
    for (; *t != '\0'; t++) {
        unsigned char c = (unsigned char)*t;
        if (c == '/') {
            if (part == 0 || ++slashes > 1)
                return 0;
            part = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   strchr(tchar_punct, c) != NULL) {
            if (++part > 127)
                return 0;
        } else {
            return 0;
        }
    }
    return slashes == 1 && part > 0;
}

static uint32_t hash_ext(const char *s, size_t len)
{
    uint32_t h = 2166136261u;       /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)tolower((unsigned char)s[i]);
        h *= 16777619u;
    }
    return h;
}

static struct mime_entry *slot_for(struct mime_entry *t, size_t size, const char *ext, size_t len)
{
    size_t i = hash_ext(ext, len) & (size - 1);
    for (;;) {
        struct mime_entry *e = &t[i];
        if (e->ext[0] == '\0' || (strlen(e->ext) == len && strncasecmp(e->ext, ext, len) == 0))
            return e;
        i = (i + 1) & (size - 1);
    }
}

int mime_load(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        errno = EISDIR;
        return -1;
    }
    if (fseek(f, 0, SEEK_END) < 0) {
        fclose(f);
        return -1;
    }
    long fsize = ftell(f);
    rewind(f);
    if (fsize < 0 || fsize > 16 * 1024 * 1024) {
        fclose(f);
        errno = EFBIG;
        return -1;
    }
    /* the text itself holds the type strings; extensions <= file size / 2 */
    char *blob = malloc((size_t)fsize + 1);
    size_t max_exts = (size_t)fsize / 2 + 1;
    size_t size = 64;
    while (size < max_exts * 2)
        size <<= 1;
    struct mime_entry *t = calloc(size, sizeof *t);
    if (blob == NULL || t == NULL) {
        free(blob);
        free(t);
        fclose(f);
        errno = ENOMEM;
        return -1;
    }
    size_t got = fread(blob, 1, (size_t)fsize, f);
    int read_error = ferror(f);
    fclose(f);
    if (read_error) {
        free(blob);
        free(t);
        errno = EIO;
        return -1;
    }
    blob[got] = '\0';
    /* a NUL would silently end the table there: not a text file, refuse it */
    const char *nul = memchr(blob, '\0', got);
    if (nul != NULL) {
        unsigned at = 1;
        for (const char *q = blob; q < nul; q++)
            at += *q == '\n';
        log_msg(LOG_ERROR, "%s:%u: NUL byte: not a text file", path, at);
        free(blob);
        free(t);
        errno = EINVAL;
        return -1;
    }

    size_t count = 0;
    unsigned lineno = 0;
    int nginx = 0;                  /* seen "types {": entries end at ';', not at line ends */
    char *pending = NULL;           /* nginx: the type of an entry not ended yet */
    char *line = blob, *next;
    for (; line != NULL && *line != '\0'; line = next) {
        lineno++;
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        char *hash = strchr(line, '#');
        if (hash != NULL)
            *hash = '\0';
        int ends_entry = strchr(line, ';') != NULL;
        char *save = NULL;
        char *type = strtok_r(line, " \t\r;", &save);
        if (type == NULL)
            continue;
        char *first_ext = NULL;
        int is_type = strchr(type, '/') != NULL;
        if (pending != NULL && !is_type && strcmp(type, "}") != 0) {
            /* nginx continues a long entry on the next line: "...document\n  docx;" */
            first_ext = type;
            type = pending;
        } else if (!is_type) {
            if (strcmp(type, "types") == 0)
                nginx = 1;
            pending = NULL;
            continue;               /* not a type line: nginx's "types {", "}" */
        } else if (!valid_type(type)) {
            log_msg(LOG_WARN, "%s:%u: line skipped: its type is not type/subtype, each at most "
                    "127 letters, digits or !#$%%&'*+-.^_`|~", path, lineno);
            pending = NULL;
            continue;
        }
        pending = nginx && !ends_entry ? type : NULL;
        char *ext = first_ext != NULL ? first_ext : strtok_r(NULL, " \t\r;", &save);
        for (; ext != NULL; ext = strtok_r(NULL, " \t\r;", &save)) {
            size_t len = strlen(ext);
            if (len == 0 || len >= MIME_EXT_MAX)
                continue;
            struct mime_entry *e = slot_for(t, size, ext, len);
            if (e->ext[0] == '\0') {
                for (size_t i = 0; i <= len; i++)
                    e->ext[i] = (char)tolower((unsigned char)ext[i]);
                count++;
            }
            e->type = type;         /* later lines win, as in nginx */
        }
    }
    free(table);
    free(types_blob);
    table = t;
    table_size = size;
    types_blob = blob;
    n_entries = count;
    return 0;
}

const char *mime_type_for(const char *name, size_t len)
{
    if (table == NULL)
        return default_type;
    size_t i = len;
    while (i > 0 && name[i - 1] != '.' && name[i - 1] != '/')
        i--;
    if (i == 0 || name[i - 1] != '.' || i == len || len - i >= MIME_EXT_MAX)
        return default_type;
    struct mime_entry *e = slot_for(table, table_size, name + i, len - i);
    return e->ext[0] != '\0' ? e->type : default_type;
}

size_t mime_count(void)
{
    return n_entries;
}

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

/* The table doubled, every entry moved to its slot in the new one: 0, or -1
 * (out of memory; the old table is kept). */
static int grow(struct mime_entry **t, size_t *size)
{
    size_t new_size = *size * 2;
    struct mime_entry *bigger = calloc(new_size, sizeof *bigger);
    if (bigger == NULL)
        return -1;
    for (size_t i = 0; i < *size; i++) {
        const struct mime_entry *e = &(*t)[i];
        if (e->ext[0] != '\0')
            *slot_for(bigger, new_size, e->ext, strlen(e->ext)) = *e;
    }
    free(*t);
    *t = bigger;
    *size = new_size;
    return 0;
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
    /* the text itself holds the type strings; the table grows with the
     * extensions it holds (at most half full), not with the file's size:
     * comments cost nothing */
    char *blob = malloc((size_t)fsize + 1);
    size_t size = 64;
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

    /* Token by token: a token with a '/' starts an entry (its type), the
     * others are its extensions.  Apache's format ends an entry at the line's
     * end; nginx's ("types {" seen) at ';', so one line may hold several
     * entries and one entry several lines.  '{', '}' and ';' also end one. */
    size_t count = 0;
    unsigned lineno = 1;
    int nginx = 0;
    const char *type = NULL;        /* the entry's type; NULL: none open */
    int skipping = 0;               /* the entry's type was refused: skip to its end */
    for (char *p = blob; *p != '\0';) {
        size_t len = strcspn(p, " \t\r\n;{}#");
        char *tok = p;
        p += len;
        char delim = *p;
        if (delim != '\0')
            *p++ = '\0';
        if (len > 0) {
            if (strchr(tok, '/') != NULL) {
                type = NULL;
                skipping = !valid_type(tok);
                if (skipping)
                    log_msg(LOG_WARN, "%s:%u: entry skipped: its type is not type/subtype, each "
                            "at most 127 letters, digits or !#$%%&'*+-.^_`|~", path, lineno);
                else
                    type = tok;
            } else if (type != NULL && len >= MIME_EXT_MAX) {
                log_msg(LOG_WARN, "%s:%u: extension \"%.40s%s\" skipped: longer than %d characters",
                        path, lineno, tok, len > 40 ? "..." : "", MIME_EXT_MAX - 1);
            } else if (type != NULL) {
                if ((count + 1) * 2 > size && grow(&t, &size) < 0) {
                    free(blob);
                    free(t);
                    errno = ENOMEM;
                    return -1;
                }
                struct mime_entry *e = slot_for(t, size, tok, len);
                if (e->ext[0] == '\0') {
                    for (size_t i = 0; i <= len; i++)
                        e->ext[i] = (char)tolower((unsigned char)tok[i]);
                    count++;
                }
                e->type = type;     /* later entries win, as in nginx */
            } else if (type == NULL && !skipping) {
                if (strcmp(tok, "types") == 0)
                    nginx = 1;
                skipping = 1;       /* not an entry: "types", a stray word */
            }
        }
        if (delim == '#')
            p += strcspn(p, "\n");
        else if (delim == '\n')
            lineno++;
        if (delim == ';' || delim == '{' || delim == '}' || (delim == '\n' && !nginx)) {
            type = NULL;
            skipping = 0;
        }
        if (delim == '}')
            nginx = 0;              /* after the block, a line is an entry again */
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

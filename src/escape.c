/* escape.c — owns escaping untrusted text into HTML and into URL paths and queries (the
 * directory listing, redirects). No I/O, no malloc. */

#include "escape.h"

#include <string.h>

/* Appends piece to out unless it would not fit whole (keeping room for the NUL); the needed
 * length is counted either way so callers can size a retry. */
static void append(char *out, size_t outcap, size_t *needed, size_t *written, const char *piece, size_t n)
{
    if (*written == *needed && outcap > 0 && *written + n < outcap) {
        memcpy(out + *written, piece, n);
        *written += n;
    }
    *needed += n;
}

static size_t finish(char *out, size_t outcap, size_t written, size_t needed)
{
    if (outcap > 0)
        out[written] = '\0';
    return needed;
}

size_t html_escape(const char *in, size_t len, char *out, size_t outcap)
{
    size_t needed = 0, written = 0;
    for (size_t i = 0; i < len; i++) {
        const char *rep;
        switch (in[i]) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        default:
            append(out, outcap, &needed, &written, in + i, 1);
            continue;
        }
        append(out, outcap, &needed, &written, rep, strlen(rep));
    }
    return finish(out, outcap, written, needed);
}

size_t url_escape_path(const char *in, size_t len, char *out, size_t outcap)
{
    /* Encoding everything but unreserved and '/' also encodes ':' (so "a:b" cannot be read as a
     * scheme in a relative href), '?' and '#', and every HTML-special character, so the result
     * can go into an href without further HTML escaping. */
    static const char hex[] = "0123456789ABCDEF";
    size_t needed = 0, written = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
            append(out, outcap, &needed, &written, (const char *)&in[i], 1);
        } else {
            char enc[3] = { '%', hex[c >> 4], hex[c & 15] };
            append(out, outcap, &needed, &written, enc, 3);
        }
    }
    return finish(out, outcap, written, needed);
}

static int is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

size_t url_escape_query(const char *in, size_t len, char *out, size_t outcap)
{
    /* query = *( pchar / "/" / "?" ); pchar = unreserved / pct-encoded / sub-delims / ":" / "@" */
    static const char hex[] = "0123456789ABCDEF";
    static const char keep[] = "-._~!$&'()*+,;=:@/?";
    size_t needed = 0, written = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            (c != '\0' && strchr(keep, c) != NULL) ||
            (c == '%' && i + 2 < len && is_hex((unsigned char)in[i + 1]) && is_hex((unsigned char)in[i + 2]))) {
            append(out, outcap, &needed, &written, (const char *)&in[i], 1);
        } else {
            char enc[3] = { '%', hex[c >> 4], hex[c & 15] };
            append(out, outcap, &needed, &written, enc, 3);
        }
    }
    return finish(out, outcap, written, needed);
}

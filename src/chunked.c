/* chunked.c — owns the byte-level state machine for chunked request bodies (RFC 9112 §7.1):
 * chunk-size, chunk-ext, data skipping, trailer section. It never stores body bytes, only
 * counts them, so the server can discard bodies of requests it answers without reading them.
 * No I/O, no malloc. */

#include "chunked.h"

#include <string.h>

enum {
    S_SIZE_START,       /* first hex digit of chunk-size */
    S_SIZE,             /* more hex digits */
    S_SIZE_BWS,         /* BWS after chunk-size: must lead to ';' */
    S_EXT_PRE_NAME,     /* after ';', BWS then chunk-ext-name */
    S_EXT_NAME,
    S_EXT_POST_NAME,    /* BWS after name: must lead to '=' or ';' */
    S_EXT_PRE_VALUE,    /* after '=', BWS then token or quoted-string */
    S_EXT_VALUE_TOKEN,
    S_EXT_VALUE_QUOTED,
    S_EXT_VALUE_QUOTED_PAIR,
    S_EXT_VALUE_END,    /* right after a closing DQUOTE */
    S_EXT_POST_VALUE,   /* BWS after value: must lead to ';' */
    S_SIZE_LF,          /* saw CR ending the chunk-size line */
    S_DATA,
    S_DATA_CR,          /* line terminator after data */
    S_DATA_LF,
    S_TRAILER_LINE_START,
    S_TRAILER_NAME,
    S_TRAILER_VALUE,
    S_TRAILER_VALUE_LF,
    S_FINAL_LF,
    S_DONE,
    S_ERROR,
};

static int is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return 1;
    switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
        return 1;
    default:
        return 0;
    }
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* RFC 9110 §5.6.4 qdtext / quoted-pair octets; also obs-text */
static int is_qdtext(unsigned char c) { return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c != 0x7f); }
static int is_quoted_pair_char(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }
static int is_field_value_char(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }
static int is_bws(unsigned char c) { return c == ' ' || c == '\t'; }

void chunked_init(struct chunked_state *st)
{
    memset(st, 0, sizeof *st);
    st->state = S_SIZE_START;
}

/* The chunk-size line is complete: either the last chunk (→ trailers) or data follows. */
static int after_size_line(const struct chunked_state *st)
{
    return st->remaining == 0 ? S_TRAILER_LINE_START : S_DATA;
}

/* Shared handling of a byte that may end the chunk-size line: -1 if it cannot.  Inside a
 * chunked body every line ends in CRLF (RFC 9112 §7.1), although the head parser takes a bare
 * LF (§2.2 allows it for the start-line and fields only): a proxy in front that reads a
 * chunk-extension up to CRLF and passes a bare LF on would find another end of the body than
 * cowd does, the chunk-extension request smuggling of 2025 ("TERM.EXT"). */
static int size_line_end(unsigned char c)
{
    return c == '\r' ? S_SIZE_LF : -1;
}

enum chunked_result chunked_feed(struct chunked_state *st, const char *in, size_t len, size_t *consumed,
                                 uint64_t *data_bytes)
{
    size_t i = 0;
    *data_bytes = st->data_total;
    if (st->state == S_DONE || st->state == S_ERROR) {
        *consumed = 0;
        return st->state == S_DONE ? CHUNKED_DONE : CHUNKED_ERROR;
    }

    while (i < len) {
        unsigned char c = (unsigned char)in[i];
        int next = -1;

        if (st->state == S_DATA) {
            size_t avail = len - i;
            size_t take = st->remaining < avail ? (size_t)st->remaining : avail;
            /* Cannot wrap today (sizes are <= 16 hex digits, so 2^64-1 per chunk) but two such
             * chunks could, and a wrapped total would defeat the caller's discard cap. */
            if (st->data_total > UINT64_MAX - take) {
                st->state = S_ERROR;
                break;
            }
            st->data_total += take;
            st->remaining -= take;
            i += take;
            if (st->remaining == 0)
                st->state = S_DATA_CR;
            continue;
        }

        if (st->state >= S_TRAILER_LINE_START && st->state <= S_FINAL_LF &&
            ++st->trailer_len > CHUNKED_MAX_TRAILER_TOTAL) {
            st->state = S_ERROR;
            break;
        }

        switch (st->state) {
        case S_SIZE_START:
        case S_SIZE: {
            int h = hex_value(c);
            if (h >= 0) {
                if (h == 0 && st->size_digits == 0) {
                    if (++st->leading_zeros > CHUNKED_MAX_LEADING_ZEROS)
                        break;
                } else if (++st->size_digits > CHUNKED_MAX_SIZE_DIGITS) {
                    break; /* would overflow uint64_t */
                }
                st->remaining = (st->remaining << 4) | (uint64_t)h;
                next = S_SIZE;
            } else if (st->state == S_SIZE) {
                if (c == ';')
                    next = S_EXT_PRE_NAME;
                else if (is_bws(c))
                    next = S_SIZE_BWS;
                else
                    next = size_line_end(c);
            }
            break;
        }
        case S_SIZE_BWS:
            if (is_bws(c))
                next = S_SIZE_BWS;
            else if (c == ';')
                next = S_EXT_PRE_NAME;
            break;
        case S_EXT_PRE_NAME:
            if (is_bws(c))
                next = S_EXT_PRE_NAME;
            else if (is_tchar(c))
                next = S_EXT_NAME;
            break;
        case S_EXT_NAME:
            if (is_tchar(c))
                next = S_EXT_NAME;
            else if (c == '=')
                next = S_EXT_PRE_VALUE;
            else if (c == ';')
                next = S_EXT_PRE_NAME;
            else if (is_bws(c))
                next = S_EXT_POST_NAME;
            else
                next = size_line_end(c);
            break;
        case S_EXT_POST_NAME:
            if (is_bws(c))
                next = S_EXT_POST_NAME;
            else if (c == '=')
                next = S_EXT_PRE_VALUE;
            else if (c == ';')
                next = S_EXT_PRE_NAME;
            break;
        case S_EXT_PRE_VALUE:
            if (is_bws(c))
                next = S_EXT_PRE_VALUE;
            else if (c == '"')
                next = S_EXT_VALUE_QUOTED;
            else if (is_tchar(c))
                next = S_EXT_VALUE_TOKEN;
            break;
        case S_EXT_VALUE_TOKEN:
            if (is_tchar(c)) {
                next = S_EXT_VALUE_TOKEN;
                break;
            }
            /* same terminators as after a quoted value */
            /* fall through */
        case S_EXT_VALUE_END:
            if (c == ';')
                next = S_EXT_PRE_NAME;
            else if (is_bws(c))
                next = S_EXT_POST_VALUE;
            else
                next = size_line_end(c);
            break;
        case S_EXT_VALUE_QUOTED:
            if (c == '"')
                next = S_EXT_VALUE_END;
            else if (c == '\\')
                next = S_EXT_VALUE_QUOTED_PAIR;
            else if (is_qdtext(c))
                next = S_EXT_VALUE_QUOTED;
            break;
        case S_EXT_VALUE_QUOTED_PAIR:
            if (is_quoted_pair_char(c))
                next = S_EXT_VALUE_QUOTED;
            break;
        case S_EXT_POST_VALUE:
            if (is_bws(c))
                next = S_EXT_POST_VALUE;
            else if (c == ';')
                next = S_EXT_PRE_NAME;
            break;
        case S_SIZE_LF:
            if (c == '\n')
                next = after_size_line(st);
            break;
        case S_DATA_CR:
            if (c == '\r')     /* CRLF right after the data */
                next = S_DATA_LF;
            break;
        case S_DATA_LF:
            if (c == '\n')
                next = S_SIZE_START;
            break;
        case S_TRAILER_LINE_START:
            if (c == '\r')
                next = S_FINAL_LF;
            else if (is_tchar(c))
                next = S_TRAILER_NAME; /* SP/HTAB here would be obs-fold: refused like in the head */
            break;
        case S_TRAILER_NAME:
            if (is_tchar(c))
                next = S_TRAILER_NAME;
            else if (c == ':')
                next = S_TRAILER_VALUE;
            break;
        case S_TRAILER_VALUE:
            if (c == '\r')
                next = S_TRAILER_VALUE_LF;
            else if (is_field_value_char(c))
                next = S_TRAILER_VALUE;
            break;
        case S_TRAILER_VALUE_LF:
        case S_FINAL_LF:
            if (c == '\n')
                next = st->state == S_FINAL_LF ? S_DONE : S_TRAILER_LINE_START;
            break;
        default:
            break;
        }

        /* Every byte that lands in the extension area (BWS, ';', names, values; not the line
         * terminator) counts toward one budget for the whole body. */
        if (next == -1 || (next >= S_SIZE_BWS && next <= S_EXT_POST_VALUE && ++st->ext_len > CHUNKED_MAX_EXT_TOTAL)) {
            st->state = S_ERROR;
            break;
        }
        if (next == S_SIZE_START) { /* a new chunk-size starts from scratch */
            st->size_digits = 0;
            st->leading_zeros = 0;
            st->remaining = 0;
        }
        st->state = next;
        i++;
        if (next == S_DONE)
            break;
    }

    *consumed = i;
    *data_bytes = st->data_total;
    if (st->state == S_DONE)
        return CHUNKED_DONE;
    if (st->state == S_ERROR)
        return CHUNKED_ERROR;
    return CHUNKED_MORE;
}

uint64_t chunked_announced(const struct chunked_state *st)
{
    /* Past S_SIZE the chunk-size is complete and `remaining` is what the chunk still owes;
     * before it, `remaining` is a chunk-size still being read and promises nothing yet. */
    uint64_t owed = st->state > S_SIZE && st->state <= S_DATA ? st->remaining : 0;
    return st->data_total > UINT64_MAX - owed ? UINT64_MAX : st->data_total + owed;
}

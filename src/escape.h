/* escape.h — escaping of file names for generated HTML (directory listings) and of URL parts.
 * Pure, no allocation. */
#ifndef COWD_ESCAPE_H
#define COWD_ESCAPE_H

#include <stddef.h>

/* Both functions work like snprintf: they return the full length the escaped text needs
 * (excluding the NUL) and write at most outcap bytes including a NUL terminator (if outcap > 0).
 * A return value >= outcap means the output was truncated; truncation never splits an escape. */

/* & < > " ' → &amp; &lt; &gt; &quot; &#39; — safe in element content and quoted attributes. */
size_t html_escape(const char *in, size_t len, char *out, size_t outcap);

/* Percent-encodes every byte except RFC 3986 unreserved (ALPHA DIGIT - . _ ~) and '/'. */
size_t url_escape_path(const char *in, size_t len, char *out, size_t outcap);

/* Percent-encodes every byte an RFC 3986 query cannot hold as it is, keeping its pct-encodings
 * ('%' and two hex digits), so that a client's query can be echoed in a Location header. */
size_t url_escape_query(const char *in, size_t len, char *out, size_t outcap);

#endif

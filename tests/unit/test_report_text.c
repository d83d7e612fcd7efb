/* test_report_text.c — the report's writers of text from result files (report_format.c,
 * csv.c, utf8.c), on what a hostile file can hold: control characters (ESC, BEL, CSI
 * as a C1 character, CR, DEL), HTML, quotes, bytes that are not UTF-8; and what they
 * must leave alone: multi-byte text and the punctuation of ordinary labels. */
#include <stdarg.h>
#include <stdlib.h>

#include "base/csv.h"
#include "report/report.h"
#include "base/utf8.h"
#include "check.h"

/* What a writer puts out for v, as a string (freed by the next call). */
static char *written(void (*writer)(FILE *, const char *), const char *v)
{
    static char *text;
    size_t len = 0;
    free(text);
    text = NULL;
    FILE *out = open_memstream(&text, &len);
    writer(out, v);
    fclose(out);
    return text;
}

static void csv_field(FILE *out, const char *v)
{
    struct csv c;
    csv_start(&c, out);
    csv_text(&c, v);
}

static void message(FILE *out, const char *v) { report_message(out, "dpscale: note: %s: read", v); }

static void json(FILE *out, const char *v)
{
    json_t *doc = json_pack("{s:o}", "device", report_json_text(v));
    report_json_write(out, doc, JSON_COMPACT);
    json_decref(doc);
}

/* ESC ] 0 ; title BEL (the terminal's title), ESC [ 2 J (clear), CSI (U+009B), CR, DEL */
#define CONTROLS "\x1b]0;t\x07\x1b[2J\xC2\x9B" "1m\r\x7f"

TEST(utf8_next_reads_one_character_and_its_code_point)
{
    unsigned cp;
    CHECK(utf8_next("a", &cp) == 1 && cp == 'a');
    CHECK(utf8_next("\xC3\xBC", &cp) == 2 && cp == 0xFC);
    CHECK(utf8_next("\xE2\x9C\x93", &cp) == 3 && cp == 0x2713);
    CHECK(utf8_next("\xF0\x9F\x9A\x80", &cp) == 4 && cp == 0x1F680);
    CHECK(utf8_next("\xC2\x9B", &cp) == 2 && cp == 0x9B && utf8_is_control(cp));
    CHECK(utf8_next("\xE9!", &cp) == 1 && cp == 0xFFFD); /* Latin-1: one byte, the replacement character */
    CHECK(utf8_is_control(0x1B) && utf8_is_control(0x7F) && utf8_is_control('\n') && !utf8_is_control(' ') &&
          !utf8_is_control(0xA0) && !utf8_is_control(0xFC));
}

TEST(markdown_text_escapes_control_characters_and_html_and_keeps_the_rest)
{
    CHECK_STR(written(report_md_text, "GPU" CONTROLS "x"), "GPU\\x1b]0;t\\x07\\x1b[2J\\x9b1m \\x7fx");
    CHECK_STR(written(report_md_text, "<script>alert(1)</script> & <img onerror=x>"),
              "&lt;script>alert(1)&lt;/script> &amp; &lt;img onerror=x>");
    CHECK_STR(written(report_md_text, "a|b\\c\nd\te"), "a\\|b\\\\c d e");
    CHECK_STR(written(report_md_text, "NCCL's own CTA count, 4096 -> 4096, \"q\" \xC3\xBC \xE2\x9C\x93"),
              "NCCL's own CTA count, 4096 -> 4096, \"q\" \xC3\xBC \xE2\x9C\x93");
    CHECK_STR(written(report_md_text, "caf\xE9"), "caf\xEF\xBF\xBD");
}

TEST(markdown_code_keeps_the_span_closed_and_on_one_line)
{
    CHECK_STR(written(report_md_code, "dpscale report `x`\n\n<b>"), "dpscale report 'x'\\x0a\\x0a&lt;b>");
    CHECK_STR(written(report_md_code, "dpscale report --doc 'a b.md' results"), "dpscale report --doc 'a b.md' results");
}

TEST(a_message_is_one_line_whatever_its_names_hold)
{
    CHECK_STR(written(message, "x\ny" CONTROLS), "dpscale: note: x\\x0ay\\x1b]0;t\\x07\\x1b[2J\\x9b1m\\x0d\\x7f: read\n");
    CHECK_STR(written(message, "r\xC3\xBC.h5 <b>"), "dpscale: note: r\xC3\xBC.h5 <b>: read\n");
}

TEST(gnuplot_text_doubles_quotes_and_escapes_control_characters)
{
    CHECK_STR(written(report_gp_text, "it's\n" CONTROLS), "it''s \\x1b]0;t\\x07\\x1b[2J\\x9b1m \\x7f");
    CHECK_STR(written(report_gp_text, "a <b> & \"c\" \xC3\xBC"), "a <b> & \"c\" \xC3\xBC"); /* gnuplot's SVG escapes < & */
}

TEST(csv_keeps_line_breaks_in_quotes_and_escapes_every_other_control_character)
{
    CHECK_STR(written(csv_field, "two\nlines"), "\"two\nlines\"");
    CHECK_STR(written(csv_field, "GPU" CONTROLS "\t"), "GPU\\x1b]0;t\\x07\\x1b[2J\\x9b1m\\x0d\\x7f\\x09");
    CHECK_STR(written(csv_field, "a, \"b\"\r\n"), "\"a, \"\"b\"\"\\x0d\n\"");
    CHECK_STR(written(csv_field, "caf\xE9 \xC3\xBC"), "caf\xEF\xBF\xBD \xC3\xBC");
}

TEST(json_keeps_the_string_and_writes_del_and_c1_escaped)
{
    CHECK_STR(written(json, "GPU" CONTROLS), "{\"device\":\"GPU\\u001B]0;t\\u0007\\u001B[2J\\u009B1m\\r\\u007F\"}");
    CHECK_STR(written(json, "\xC3\xBC \xE2\x9C\x93"), "{\"device\":\"\xC3\xBC \xE2\x9C\x93\"}");
}

int main(void) { return test_main("report_text"); }

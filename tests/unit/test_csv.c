/* test_csv.c — the report's CSV fields (RFC 4180 quoting) and the UTF-8 clean-up of
 * text read from result files, on hostile names: commas, quotes, line breaks,
 * non-ASCII, bytes that are not UTF-8 and names cut in the middle of a character. */
#include <math.h>
#include <stdlib.h>

#include "base/csv.h"
#include "base/utf8.h"
#include "check.h"

/* One row of text fields, as the CSV writer puts it out. */
static char *row_of(const char *const *fields, int n)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    struct csv c;
    csv_start(&c, out);
    for (int i = 0; i < n; i++) csv_text(&c, fields[i]);
    csv_end_row(&c);
    fclose(out);
    return text;
}

static void check_field(const char *field, const char *want)
{
    char *got = row_of(&field, 1);
    char expected[256];
    snprintf(expected, sizeof expected, "%s\n", want);
    CHECK_STR(got, expected);
    free(got);
}

TEST(plain_fields_are_written_as_they_are)
{
    check_field("NVIDIA H200", "NVIDIA H200");
    check_field("", "");
    check_field("  spaces kept ", "  spaces kept ");
}

TEST(a_comma_puts_the_field_in_quotes)
{
    check_field("NVIDIA H200 nvlink, overlap on", "\"NVIDIA H200 nvlink, overlap on\"");
}

TEST(a_quote_is_doubled_inside_quotes)
{
    check_field("the \"fast\" one", "\"the \"\"fast\"\" one\"");
    check_field("\"", "\"\"\"\"");
}

TEST(line_breaks_stay_inside_quotes)
{
    check_field("two\nlines", "\"two\nlines\"");
    check_field("cr\rlf\r\n", "\"cr\\x0dlf\\x0d\n\""); /* a lone CR would rewrite the terminal line */
}

TEST(non_ascii_passes_through_unquoted)
{
    check_field("Grafikkarte \xC3\xBC \xE2\x9C\x93", "Grafikkarte \xC3\xBC \xE2\x9C\x93");
}

TEST(fields_are_separated_by_commas_and_rows_end_in_lf)
{
    const char *fields[] = {"a,b", "c", "d\"e"};
    char *got = row_of(fields, 3);
    CHECK_STR(got, "\"a,b\",c,\"d\"\"e\"\n");
    free(got);
}

TEST(numbers_keep_ten_digits_and_unknown_is_empty)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    struct csv c;
    csv_start(&c, out);
    csv_number(&c, 1509425.4321987);
    csv_number(&c, NAN);
    csv_number(&c, INFINITY);
    csv_int(&c, -3);
    csv_number(&c, 0.5);
    csv_end_row(&c);
    fclose(out);
    CHECK_STR(text, "1509425.432,,,-3,0.5\n");
    free(text);
}

TEST(header_and_rows_have_the_same_number_of_fields)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    struct csv c;
    csv_start(&c, out);
    const char *names[] = {"gpus", "system"};
    csv_header(&c, names, 2);
    csv_int(&c, 2);
    csv_text(&c, "x, y");
    csv_end_row(&c);
    fclose(out);
    CHECK_STR(text, "gpus,system\n2,\"x, y\"\n");
    free(text);
}

TEST(utf8_copy_keeps_well_formed_text)
{
    char buf[64];
    CHECK_STR(utf8_copy(buf, sizeof buf, "H200 \xC3\xBC \xE2\x9C\x93 \xF0\x9F\x9A\x80"), "H200 \xC3\xBC \xE2\x9C\x93 \xF0\x9F\x9A\x80");
    CHECK(utf8_valid(buf));
}

TEST(utf8_copy_replaces_bytes_that_are_not_utf8)
{
    char buf[64];
    CHECK(!utf8_valid("caf\xE9"));                       /* Latin-1 e acute */
    CHECK_STR(utf8_copy(buf, sizeof buf, "caf\xE9!"), "caf\xEF\xBF\xBD!");
    CHECK_STR(utf8_copy(buf, sizeof buf, "\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD"); /* overlong '/' */
    CHECK_STR(utf8_copy(buf, sizeof buf, "\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); /* a surrogate */
    CHECK_STR(utf8_copy(buf, sizeof buf, "\xF4\x90\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    CHECK_STR(utf8_copy(buf, sizeof buf, "end\xE2\x9C"), "end\xEF\xBF\xBD\xEF\xBF\xBD"); /* cut short */
    CHECK(utf8_valid(buf));
}

TEST(utf8_copy_never_cuts_a_character_in_two)
{
    char buf[6]; /* room for 5 bytes: "ab" and one 3-byte character, not two */
    CHECK_STR(utf8_copy(buf, sizeof buf, "ab\xE2\x9C\x93\xE2\x9C\x93"), "ab\xE2\x9C\x93");
    char small[5]; /* 4 bytes: "ab" fits, the check mark does not */
    CHECK_STR(utf8_copy(small, sizeof small, "ab\xE2\x9C\x93"), "ab");
    CHECK(utf8_valid(small));
}

int main(void) { return test_main("csv"); }

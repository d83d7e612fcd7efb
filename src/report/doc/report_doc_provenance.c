/* report_doc_provenance.c — the procurement document's appendix (report_doc.h): the
 * provenance of each file, every attribute it holds at its root, in /system,
 * /projection and /provenance, read generically (report_doc_read.c), so a file shows
 * what its schema recorded and nothing is required. */
#include <stdio.h>
#include <string.h>

#include "report/report.h"
#include "report/doc/report_doc.h"

void doc_write_provenance(FILE *out, const struct report_file *files, int n, const struct doc_info *infos)
{
    static const char *const kinds[] = {"run file", "comm file", "topo file", "dump file"};
    fputs("## Appendix: provenance of each file\n\nEvery attribute each file holds at its root, in `/system`, "
          "`/projection` and `/provenance` (a file shows what its schema recorded; `/config` holds every configuration "
          "key and is left out here: `h5dump -A -g /config FILE`).\n\n", out);
    for (int i = 0; i < n; i++) {
        const struct doc_info *in = &infos[i];
        fputs("### ", out);
        report_md_text(out, doc_base_name(files[i].path));
        fputs("\n\n`", out);
        report_md_code(out, files[i].path);
        fprintf(out, "`: %s%s, schema %d\n\n", files[i].projected ? "projection, " : "", kinds[files[i].kind], in->schema);
        if (!in->readable) {
            fputs("(its attributes could not be read again)\n\n", out);
            continue;
        }
        fputs("| attribute | value |\n|---|---|\n", out);
        if (in->hosts[0]) {
            fputs("| hosts | ", out);
            report_md_text(out, in->hosts);
            fputs(" |\n", out);
        }
        for (int k = 0; k < in->nattrs; k++) {
            if (strncmp(in->attrs[k].name, "config/", 7) == 0) continue;
            fputs("| ", out);
            report_md_text(out, in->attrs[k].name);
            fputs(" | ", out);
            report_md_text(out, in->attrs[k].value[0] ? in->attrs[k].value : "(empty)");
            fputs(" |\n", out);
        }
        fputc('\n', out);
    }
}

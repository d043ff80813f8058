"""The MCP server's ``instructions``: a short CODAP primer (at most 2 KB, tests/unit/test_resources.py)."""

from __future__ import annotations

PRIMER = """\
You work in the user's open CODAP document through the codap-relay plugin in their browser.
CODAP: a dataset holds collections (parent > child when grouped); each collection has attributes (columns: \
type, unit, formula, description); cases are the rows. A formula attribute is computed by CODAP \
(e.g. mean(height), if(age>12,"teen","child")); change it with update_codap_attribute, not by editing cases. \
Case ids are CODAP's item ids: export_codap_data includeCaseIds gives them; the caseIds of \
update_codap_cases, delete_codap_cases, select_codap_cases, evaluate_codap_formula take them.
Which tool: what is there → get_codap_status / get_codap_datasets; the data → export_codap_data; numbers \
→ compute_codap_statistics (groupBy, groups, where); which cases → select_codap_cases (lists them); \
a graph → create_codap_graph (its adornments: mean, box_plot… and barChartScale in the same call), \
update_codap_graph (hideCasesWhere), add_codap_adornment, get_codap_graph_image to see it; \
new data → create_codap_dataset, add_codap_cases, \
import_codap_data; edits → update_codap_cases (updates: several at once), add_codap_attribute, \
group_codap_cases; outliers out and back → set_aside_codap_cases; columns, table or card → \
update_codap_table; rename a dataset → update_codap_dataset; layout → update_codap_component place; \
bold, lists in a note → create_codap_text markdown; hide cases on a map → update_codap_map; correlation → \
compute_codap_statistics pairedWith; mistakes → \
undo_codap (a deletion: undo_codap_tool_calls). Use exact names from the document.
Resources (read-only, live): codap://datasets, codap://components, codap://datasets/NAME (attributes, \
example cases), codap://datasets/NAME/cases (CSV, in pages when large: follow the next link), \
codap://graphs/NAME/image (PNG). Prompts give class routines.
If a call says the plugin is not connected, ask the user to open CODAP with the plugin. If a call times \
out, check its outcome before retrying: creating datasets or adding cases twice duplicates them."""

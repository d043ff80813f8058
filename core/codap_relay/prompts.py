"""Class routines as MCP prompts: short, for students and teachers, naming the typed tools and resources to use.

Transport-free: the MCP endpoint serves them (mcp_prompts.py) and ``/llms.txt`` lists them as plain text. An
argument named ``datasetName`` or ``graph`` is completed from the open document; ``*Attribute`` ones from the
attributes of the ``datasetName`` already given.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Argument:
    name: str
    description: str
    required: bool = False


@dataclass(frozen=True)
class Prompt:
    name: str
    title: str
    description: str
    arguments: tuple[Argument, ...]
    template: str  # str.format with every argument (missing optional ones become "")

    def render(self, args: dict[str, str]) -> str:
        missing = [a.name for a in self.arguments if a.required and not (args.get(a.name) or "").strip()]
        if missing:
            raise PromptError(f"Prompt {self.name} needs {', '.join(missing)}.")
        values = {a.name: (args.get(a.name) or "").strip() for a in self.arguments}
        if "datasetName" in values:
            values["datasetUri"] = f"codap://datasets/{quote(values['datasetName'], safe='')}"
        if "graph" in values:
            uri = f"codap://graphs/{quote(values['graph'], safe='')}/image"
            values["graphFocus"] = (
                f"Look closely at the graph {values['graph']}: read {uri}." if values["graph"] else ""
            )
        return "\n".join(line for line in self.template.format(**values).split("\n") if line.strip() != "-")


class PromptError(Exception):
    pass


DATASET = Argument("datasetName", "The dataset to work on (its name in CODAP)", required=True)

PROMPTS: list[Prompt] = [
    Prompt(
        "explore_dataset",
        "Explore a dataset",
        "A first look at a dataset: what each attribute holds, its size, centres and spreads, and what to ask next.",
        (DATASET,),
        'Help me explore the CODAP dataset "{datasetName}".\n'
        "- Read {datasetUri} (attributes, types, units, example cases); its cases are at {datasetUri}/cases.\n"
        "- Describe each attribute in a sentence: what it measures, its type and unit.\n"
        "- Use compute_codap_statistics for count, mean, median, min, max of the numeric attributes.\n"
        "- Make one graph with create_codap_graph that shows something interesting, and look at it with "
        "get_codap_graph_image.\n"
        "- End with three questions a class could investigate with this data. Keep it short and plain.",
    ),
    Prompt(
        "compare_groups",
        "Compare groups",
        "Compare a numeric attribute across the groups of a categorical one, with statistics and a graph.",
        (
            DATASET,
            Argument("measureAttribute", "The numeric attribute to compare", required=True),
            Argument("groupAttribute", "The categorical attribute that makes the groups", required=True),
        ),
        'Compare {measureAttribute} across the groups of {groupAttribute} in the CODAP dataset "{datasetName}".\n'
        "- Use compute_codap_statistics on {measureAttribute} with groupBy {groupAttribute}: count, mean, median, sd, "
        "q1, q3 for each group.\n"
        "- Make a graph with create_codap_graph: {groupAttribute} on one axis, {measureAttribute} on the other; add "
        "add_codap_adornment box_plot (or mean) so the centres show.\n"
        "- Check the picture with get_codap_graph_image.\n"
        "- Say which group is higher, by how much, and whether the spreads overlap so much that the difference could "
        "be chance. Explain for a student.",
    ),
    Prompt(
        "fit_line",
        "Fit a line and interpret it",
        "A scatterplot with a least-squares line, its slope, intercept and r² explained in context.",
        (
            DATASET,
            Argument("xAttribute", "The explanatory attribute (x axis)", required=True),
            Argument("yAttribute", "The response attribute (y axis)", required=True),
        ),
        'In the CODAP dataset "{datasetName}", fit a line to {yAttribute} against {xAttribute}.\n'
        "- Make a scatterplot with create_codap_graph (xAttribute {xAttribute}, yAttribute {yAttribute}).\n"
        "- Add add_codap_adornment least_squares_line with showRSquared true.\n"
        "- Look at it with get_codap_graph_image: is a straight line a fair summary? Any outliers?\n"
        "- Read the slope and intercept from the graph's answer and say what they mean in the units of the data "
        '("for each extra … , … goes up by about …"), and what r² says. Warn about predicting outside the data.',
    ),
    Prompt(
        "clean_data",
        "Clean the data",
        "Find missing values, outliers and values of the wrong type, then fix them only with the user's consent.",
        (DATASET,),
        'Check the CODAP dataset "{datasetName}" for problems before we analyse it.\n'
        "- Read {datasetUri} for attribute types and units, and {datasetUri}/cases for the values.\n"
        "- List missing values (empty cells), numbers stored as text, impossible values and outliers "
        "(compute_codap_statistics: min, max, quartiles), each with its case id (export_codap_data includeCaseIds).\n"
        "- Show them selected in CODAP with select_codap_cases.\n"
        "- Propose a fix for each and ask me before changing anything; then use update_codap_cases, "
        "update_codap_attribute (type, unit) or delete_codap_cases. Say what changed; undo_codap reverts a change, "
        "undo_codap_tool_calls a deletion (CODAP's own Undo cannot bring deleted cases back).",
    ),
    Prompt(
        "graph_for_question",
        "Make the graph that answers a question",
        "Choose and make the CODAP graph that best answers a question about a dataset, then read the answer from it.",
        (DATASET, Argument("question", "The question to answer, in your own words", required=True)),
        'Question about the CODAP dataset "{datasetName}": {question}\n'
        "- Read {datasetUri} to find the attributes that answer it.\n"
        "- Pick the graph: one attribute → dot plot or histogram; a number by a category → dot plot split by the "
        "category; two numbers → scatterplot. Make it with create_codap_graph (legendAttribute for a third).\n"
        "- Look at it with get_codap_graph_image; fix axes or type with update_codap_graph if it does not show the "
        "answer.\n"
        "- Answer the question in two or three sentences that point at what the graph shows.",
    ),
    Prompt(
        "explain_screen",
        "Explain what is on the screen",
        "Describe the open CODAP document for a student: datasets, tables, graphs and what they show.",
        (Argument("graph", "A graph to look at closely (its name or title); all graphs if left out"),),
        "Explain what is on my CODAP screen, for a student.\n"
        "- Read codap://components (what is open) and codap://datasets (the data behind it).\n"
        "- {graphFocus}\n"
        "- Look at each graph with get_codap_graph_image (or read codap://graphs/NAME/image).\n"
        "- Say what each table and graph shows, which attributes are on which axis, and one thing the graph tells "
        "us. Use the names shown on screen.",
    ),
]

BY_NAME = {p.name: p for p in PROMPTS}


def find_prompt(name: str) -> Prompt:
    found = BY_NAME.get(name)
    if found is None:
        raise PromptError(f"No prompt {name!r}. Prompts: {', '.join(BY_NAME)}.")
    return found


def prompts_text() -> str:
    """One line per prompt for /llms.txt: name, arguments, what it does."""
    lines = []
    for p in PROMPTS:
        args = ", ".join(a.name + ("" if a.required else "?") for a in p.arguments)
        lines.append(f"- {p.name}({args}): {p.description}")
    return "\n".join(lines)

"""The queries of deploy/grafana/registryd.json as Grafana would send them.

- load(path):        the dashboard document
- check_shape(doc):  what an import needs: the two variables (datasource, instance), every panel
                     and target on the `${datasource}` variable, an expression in every target;
                     returns a list of problems
- targets(doc):      (panel title, refId, expr) for every query of every panel, rows included
- substitute(expr, values): Grafana's variables replaced the way its Prometheus data source
                     does: $__rate_interval, $__interval, $__range (durations), and a multi-value
                     variable as a regex alternation whose specials are escaped for a PromQL string

Standard library only.
"""

import json
import re

DATASOURCE = "${datasource}"


def load(path):
    with open(path) as f:
        return json.load(f)


def _panels(doc):
    for panel in doc.get("panels", []):
        yield panel
        for inner in panel.get("panels", []):  # a collapsed row keeps its panels inside it
            yield inner


def targets(doc):
    found = []
    for panel in _panels(doc):
        for target in panel.get("targets", []):
            found.append((panel.get("title", "?"), target.get("refId", "?"), target.get("expr", "")))
    return found


def variables(doc):
    return {variable["name"]: variable for variable in doc.get("templating", {}).get("list", [])}


def variable_query(variable):
    """The PromQL of a query variable (a string, or {"query": ...} in newer Grafana)."""
    query = variable.get("query")
    return query.get("query") if isinstance(query, dict) else query


def check_shape(doc):
    problems = []
    known = variables(doc)
    datasource = known.get("datasource")
    if not datasource or datasource.get("type") != "datasource" or datasource.get("query") != "prometheus":
        problems.append('no "datasource" variable of type datasource for prometheus')
    instance = known.get("instance")
    if not instance or instance.get("type") != "query" or not variable_query(instance):
        problems.append('no "instance" query variable')
    elif (instance.get("datasource") or {}).get("uid") != DATASOURCE:
        problems.append(f'the "instance" variable does not query {DATASOURCE}')
    for panel in _panels(doc):
        if panel.get("type") == "row":
            continue
        title = panel.get("title", "?")
        if (panel.get("datasource") or {}).get("uid") != DATASOURCE:
            problems.append(f"panel {title!r}: its data source is not {DATASOURCE}")
        if not panel.get("targets"):
            problems.append(f"panel {title!r}: no query")
        for target in panel.get("targets", []):
            if not target.get("expr", "").strip():
                problems.append(f"panel {title!r} query {target.get('refId')}: no expr")
            if (target.get("datasource") or {}).get("uid") not in (None, DATASOURCE):
                problems.append(f"panel {title!r} query {target.get('refId')}: its data source is not {DATASOURCE}")
    return problems


def regex_value(values):
    """Several values as Grafana's Prometheus data source writes them: (a|b), specials escaped
    once for the regex and once more for the PromQL string literal."""
    escaped = [re.sub(r"([\\^$*+?.()|{}\[\]/])", r"\\\\\1", value) for value in values]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


def substitute(expr, values):
    """`expr` with every $name, ${name} and [[name]] of `values` replaced (longest names first)."""
    for name in sorted(values, key=len, reverse=True):
        value = values[name]
        expr = expr.replace("${" + name + "}", value).replace("[[" + name + "]]", value)
        expr = re.sub(r"\$" + re.escape(name) + r"(?![A-Za-z0-9_])", lambda _: value, expr)
    return expr


def unresolved(expr):
    """Variables left in `expr` after substitution."""
    return re.findall(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\[\[[A-Za-z0-9_]+\]\]", expr)

"""Self-contained HTML audit report: one file, inline CSS, JS and SVG, no network requests, opens offline.

Every value from the scan is HTML-escaped and lives in the DOM, never inside the script (scanned data
is hostile; a column path could hold ``</script>``). A Content-Security-Policy meta tag forbids every
network fetch, so the file behaves the same offline, in a mail attachment or in a CI artifact viewer.
The findings table is rendered server-side (readable without JS); the script adds sorting, filtering
and a URL-hash state (``#verdict=valid&sort=row&dir=desc&open=2,5``) so a filtered view can be linked.
"""

from __future__ import annotations

from html import escape

from shardscan.model import Finding, Severity, Verdict
from shardscan.report import Report
from shardscan.reporters._common import (
    VERDICT_MEANING,
    VERDICTS,
    entry_text,
    gate_why,
    issue_where,
    shard_rows,
    summary_numbers,
)
from shardscan.sizes import format_size

# Verdict colours. Verdicts that block under the default policy are warm and drawn solid; the
# others are cool or neutral and drawn as outlines (pills) or hatched (bars), so that the two
# groups differ in shape and lightness as well as hue (colour-blind readers, greyscale prints).
# None of them is the green of the PASS banner.
VERDICT_COLOR: dict[str, str] = {
    Verdict.VALID: "#b91c1c",
    Verdict.UNVERIFIED: "#c2410c",
    Verdict.ENCRYPTED: "#a16207",
    Verdict.EXPIRED: "#475569",
    Verdict.INVALID: "#64748b",
    Verdict.EXAMPLE: "#1d4ed8",
    Verdict.REDACTED: "#6d28d9",
    Verdict.TEST_MODE: "#0e7490",
    Verdict.LOCAL_ONLY: "#0e7490",
}
PASS_COLOR = "#166534"
FAIL_COLOR = "#991b1b"
INCOMPLETE_COLOR = "#92400e"
ERROR_COLOR = "#6b7280"
MAX_CHART_SHARDS = 40


def _blocking_verdicts(report: Report) -> frozenset[str]:
    """The verdicts that block under the report's policy (every verdict under --strict)."""
    return frozenset(str(v) for v in report.policy.verdicts_that_block)


def _pill(verdict: str, blocking: frozenset[str]) -> str:
    color = VERDICT_COLOR.get(verdict, "#999")
    if verdict in blocking:
        return f'<span class="pill solid" style="background:{color};border-color:{color}">{e(verdict)}</span>'
    return f'<span class="pill outline" style="color:{color};border-color:{color}">{e(verdict)}</span>'


def _fill(verdict: str, blocking: frozenset[str]) -> str:
    """SVG paint for a bar: solid for a verdict that blocks, a pale fill inside the verdict's
    outline for one that does not (no pattern: a url() reference is kept out of the report)."""
    color = VERDICT_COLOR.get(verdict, "#999")
    if verdict in blocking:
        return f'fill="{color}" stroke="{color}"'
    return f'fill="{color}" fill-opacity="0.22" stroke="{color}" stroke-width="2"'


def e(value: object) -> str:
    """HTML-escape anything (quotes included, so it is safe in attributes too)."""
    return escape("" if value is None else str(value), quote=True)


_CSS_TEMPLATE = """
:root{--fg:#111827;--muted:#6b7280;--line:#e5e7eb;--bg:#f9fafb;--pass:PASS_COLOR;--fail:FAIL_COLOR;--incomplete:INCOMPLETE_COLOR}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);margin:0;background:#fff}
main{max-width:1280px;margin:0 auto;padding:20px 24px 48px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.meta{color:var(--muted);font-size:13px}
.gate{border-radius:10px;padding:16px 20px;margin:16px 0;color:#fff}
.gate.pass{background:var(--pass)}.gate.fail{background:var(--fail)}
.gate.incomplete{background:var(--incomplete);background-image:repeating-linear-gradient(135deg,transparent 0 14px,rgba(255,255,255,.08) 14px 28px)}
.gate .mark{font-size:30px;margin-right:10px}
.problems{border:2px solid var(--incomplete);border-radius:8px;padding:10px 16px;margin:12px 0;background:#fffbeb}
.problems h2{margin:0 0 6px;color:var(--incomplete)}.problems ul{margin:0;padding-left:20px}
.gate .verdict{font-size:26px;font-weight:700;letter-spacing:.5px}
.gate ul{margin:6px 0 0;padding-left:20px;opacity:.95}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}
.card{border:1px solid var(--line);border-radius:8px;padding:8px 14px;min-width:110px;background:var(--bg)}
.card b{display:block;font-size:20px}.card span{color:var(--muted);font-size:12px}
.card.alert b{color:var(--fail)}
.charts{display:flex;flex-wrap:wrap;gap:24px}
.chart{border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:#fff}
.chart h3{font-size:13px;margin:0 0 6px;color:var(--muted);font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:10px;font-size:12px;color:var(--muted);margin-top:6px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin:8px 0}
.filters input[type=search]{width:280px;padding:5px 8px;border:1px solid #d1d5db;border-radius:6px}
.filters select{padding:4px 6px;border:1px solid #d1d5db;border-radius:6px}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:var(--bg);font-weight:600;white-space:nowrap}
th.sortable{cursor:pointer;user-select:none}th.sortable:hover{background:#eef2ff}
th[aria-sort=ascending]::after{content:" \\25B2";font-size:10px}
th[aria-sort=descending]::after{content:" \\25BC";font-size:10px}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.wrap{overflow-wrap:anywhere;min-width:140px}
code.preview{white-space:nowrap}
code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f3f4f6;padding:1px 4px;border-radius:4px}
.pill{display:inline-block;padding:0 8px;border-radius:999px;font-size:12px;font-weight:600;border:2px solid}
.pill.solid{color:#fff}.pill.outline{background:#fff}
.sev{font-size:12px;font-weight:600;text-transform:uppercase;letter-spacing:.3px}
.sev-critical{color:#991b1b}.sev-high{color:#c2410c}.sev-medium{color:#a16207}.sev-low,.sev-info{color:#6b7280}
.blocking{color:var(--fail);font-weight:700}
dl.detail{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:2px 0 6px 28px;max-width:1100px}
tr.detail-row td{background:#fbfbfd;border-bottom:1px solid var(--line)}
tr.finding.open td{border-bottom:none;background:#f5f7ff}
code.context{white-space:pre-wrap;overflow-wrap:anywhere}
button.toggle{border:1px solid #d1d5db;background:#fff;border-radius:6px;padding:1px 8px;cursor:pointer;color:#2563eb}
button.toggle[aria-expanded=true]{background:#eef2ff}
dl.detail dt{color:var(--muted)}dl.detail dd{margin:0;overflow-wrap:anywhere}
.empty{color:var(--muted);font-style:italic}
footer{margin-top:32px;color:var(--muted);font-size:12px}
"""  # noqa: E501 (embedded CSS, JS and HTML: a line break would change the document)
_CSS = (
    _CSS_TEMPLATE.replace("PASS_COLOR", PASS_COLOR).replace("FAIL_COLOR", FAIL_COLOR)
    .replace("INCOMPLETE_COLOR", INCOMPLETE_COLOR)
)

# Registered first, in <head>, so it sees errors of every later script: it writes them into
# #js-errors, where an automated check (headless Chromium in the tests) or a reader can see them.
_JS_ERRORS = r"""
(function(){
  var errors=[];
  function show(){
    var m=document.getElementById("js-errors");
    if(m){m.setAttribute("data-count",String(errors.length));m.textContent=errors.join("\n");m.hidden=!errors.length;}
  }
  window.addEventListener("error",function(ev){errors.push(String(ev.message||ev));show();});
  window.addEventListener("unhandledrejection",function(ev){errors.push("unhandled rejection: "+String(ev.reason));show();});
  document.addEventListener("DOMContentLoaded",show);
})();
"""  # noqa: E501 (embedded CSS, JS and HTML: a line break would change the document)

# Plain ES2017, no external code; #js-state says the script ran to the end.
_JS = r"""
(function(){
  "use strict";
  var table=document.getElementById("findings");
  var state=document.getElementById("js-state");
  if(!table){if(state){state.setAttribute("data-ready","1");}return;}
  var tbody=table.tBodies[0];
  var rows=Array.prototype.slice.call(tbody.querySelectorAll("tr.finding"));
  var detail={};
  rows.forEach(function(r){
    var b=r.querySelector("button.toggle"),d=document.getElementById(b.getAttribute("aria-controls"));
    detail[r.getAttribute("data-index")]=d;d.hidden=true;
    b.addEventListener("click",function(){
      var open=b.getAttribute("aria-expanded")!=="true";
      b.setAttribute("aria-expanded",String(open));r.classList.toggle("open",open);d.hidden=!open||r.hidden;
      writeHash();
    });
  });
  var q=document.getElementById("f-q"),fv=document.getElementById("f-verdict"),
      fs=document.getElementById("f-status"),fb=document.getElementById("f-blocking"),
      shown=document.getElementById("f-shown");
  var sortKey=null,sortDir=1;
  function cellValue(row,key){
    var v=row.getAttribute("data-"+key)||"";
    return (key==="row"||key==="index"||key==="severity")?Number(v):v.toLowerCase();
  }
  function apply(){
    var text=q.value.trim().toLowerCase(),n=0;
    rows.forEach(function(r){
      var ok=(!text||r.getAttribute("data-search").indexOf(text)>=0)&&
        (!fv.value||r.getAttribute("data-verdict")===fv.value)&&
        (!fs.value||r.getAttribute("data-status")===fs.value)&&
        (!fb.checked||r.getAttribute("data-blocking")==="true");
      r.hidden=!ok;if(ok){n++;}
      detail[r.getAttribute("data-index")].hidden=!ok||!r.classList.contains("open");
    });
    shown.textContent=String(n);
    table.setAttribute("data-shown",String(n));
    writeHash();
  }
  function sortBy(key,dir){
    sortKey=key;sortDir=dir;
    var sorted=rows.slice().sort(function(a,b){
      var x=cellValue(a,key),y=cellValue(b,key);
      if(x<y){return -dir;}if(x>y){return dir;}
      return cellValue(a,"index")-cellValue(b,"index");
    });
    sorted.forEach(function(r){tbody.appendChild(r);tbody.appendChild(detail[r.getAttribute("data-index")]);});
    Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th){
      var k=th.getAttribute("data-key");
      if(k===key){th.setAttribute("aria-sort",dir>0?"ascending":"descending");}else{th.removeAttribute("aria-sort");}
    });
    table.setAttribute("data-sort",key+":"+(dir>0?"asc":"desc"));
    writeHash();
  }
  function writeHash(){
    var p=[];
    if(q.value){p.push("q="+encodeURIComponent(q.value));}
    if(fv.value){p.push("verdict="+encodeURIComponent(fv.value));}
    if(fs.value){p.push("status="+encodeURIComponent(fs.value));}
    if(fb.checked){p.push("blocking=1");}
    if(sortKey){p.push("sort="+encodeURIComponent(sortKey)+"&dir="+(sortDir>0?"asc":"desc"));}
    var opened=rows.filter(function(r){return r.classList.contains("open");}).map(function(r){return r.getAttribute("data-index");});
    if(opened.length){p.push("open="+(opened.length===rows.length?"all":opened.join(",")));}
    var h=p.join("&");
    if(history.replaceState){history.replaceState(null,"",h?"#"+h:location.pathname+location.search);}
  }
  function readHash(){
    var params={};
    location.hash.replace(/^#/,"").split("&").forEach(function(kv){
      if(!kv){return;}var i=kv.indexOf("=");
      params[decodeURIComponent(i<0?kv:kv.slice(0,i))]=decodeURIComponent(i<0?"":kv.slice(i+1));
    });
    return params;
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th){
    var key=th.getAttribute("data-key");if(!key){return;}
    th.classList.add("sortable");th.tabIndex=0;
    function go(){sortBy(key,sortKey===key?-sortDir:1);}
    th.addEventListener("click",go);
    th.addEventListener("keydown",function(ev){if(ev.key==="Enter"||ev.key===" "){ev.preventDefault();go();}});
  });
  [q,fv,fs,fb].forEach(function(el){el.addEventListener("input",apply);el.addEventListener("change",apply);});
  var p=readHash();
  if(p.q){q.value=p.q;}
  if(p.verdict){fv.value=p.verdict;}
  if(p.status){fs.value=p.status;}
  if(p.blocking==="1"){fb.checked=true;}
  if(p.sort){sortBy(p.sort,p.dir==="desc"?-1:1);}
  if(p.open){
    var want=p.open==="all"?null:p.open.split(",");
    rows.forEach(function(r){
      if(!want||want.indexOf(r.getAttribute("data-index"))>=0){r.querySelector("button.toggle").click();}
    });
  }
  apply();
  if(state){state.setAttribute("data-ready","1");}
})();
"""  # noqa: E501 (embedded CSS, JS and HTML: a line break would change the document)


def _bar_chart_verdicts(counts: dict[str, int], blocking: frozenset[str]) -> str:
    """Horizontal bars: findings per verdict."""
    width, bar_h, gap, label_w = 420, 18, 6, 90
    vmax = max(counts.values()) or 1
    h = len(counts) * (bar_h + gap) + gap
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img" '
             f'aria-label="findings per verdict" id="chart-verdicts">']
    for i, (verdict, n) in enumerate(counts.items()):
        y = gap + i * (bar_h + gap)
        w = 0 if n == 0 else max(2, round((width - label_w - 40) * n / vmax))
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" font-size="12" fill="#374151">{e(verdict)}</text>'
            f'<rect data-verdict="{e(verdict)}" data-count="{n}" x="{label_w}" y="{y}" width="{w}" height="{bar_h}" '
            f'rx="3" {_fill(verdict, blocking)}>'
            f'<title>{e(verdict)}: {n}</title></rect>'
            f'<text x="{label_w + w + 6}" y="{y + 13}" font-size="12" fill="#111827">{n}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _bar_chart_shards(report: Report) -> str:
    """Stacked horizontal bars: findings per shard by verdict (shards with findings or errors)."""
    blocking = _blocking_verdicts(report)
    rows = [r for r in shard_rows(report) if r.findings or r.issues]
    if not rows:
        return '<p class="empty" id="chart-shards">No shard has findings or errors.</p>'
    more = len(rows) - MAX_CHART_SHARDS
    if more > 0:
        # Keep the shards that matter most (not fully read, then most findings), shown in name order.
        keep = sorted(rows, key=lambda r: (not r.issues, -r.blocking, -r.findings, r.shard))[:MAX_CHART_SHARDS]
        rows = sorted(keep, key=lambda r: r.shard)
    width, bar_h, gap, label_w = 560, 16, 5, 230
    vmax = max(max(r.findings for r in rows), 1)
    h = len(rows) * (bar_h + gap) + gap
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img" '
             f'aria-label="findings per shard" id="chart-shards">']
    for i, r in enumerate(rows):
        y = gap + i * (bar_h + gap)
        label = r.shard if len(r.shard) <= 34 else "…" + r.shard[-33:]
        parts.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end" font-size="11" fill="#374151">'
                     f'<title>{e(r.shard)}</title>{e(label)}</text>')
        x = label_w
        for verdict in VERDICTS:
            n = r.by_verdict[verdict]
            if not n:
                continue
            w = max(2, round((width - label_w - 70) * n / vmax))
            parts.append(f'<rect data-shard="{e(r.shard)}" data-verdict="{e(verdict)}" data-count="{n}" x="{x}" '
                         f'y="{y}" width="{w}" height="{bar_h}" {_fill(verdict, blocking)}>'
                         f'<title>{e(r.shard)}: {n} {e(verdict)}</title></rect>')
            x += w
        note = f"{r.findings}" + (" ⚠ not fully read" if r.issues else "")
        color = ERROR_COLOR if r.issues else "#111827"
        parts.append(f'<text x="{x + 6}" y="{y + 12}" font-size="11" fill="{color}">{e(note)}</text>')
    parts.append("</svg>")
    if more > 0:
        parts.append(f'<p class="meta">… and {more} more shard(s) with fewer findings (see the table).</p>')
    return "".join(parts)


def _legend(blocking: frozenset[str]) -> str:
    def swatch(v: str) -> str:
        color = VERDICT_COLOR[v]
        if v in blocking:
            return f'<i style="background:{color};border:1px solid {color}"></i>'
        return f'<i style="border:2px solid {color};background:#fff"></i>'

    return '<div class="legend">' + "".join(
        f'<span title="{e(VERDICT_MEANING[v])}">{swatch(v)}{e(v)}{" (blocks)" if v in blocking else ""}</span>'
        for v in VERDICTS
    ) + "</div>"


def _detail(f: Finding) -> str:
    chain = " → ".join(f.encoding) if f.encoding else "none (matched in the raw cell text)"
    items = [
        ("verdict", f"{f.verdict}: {f.detail}"),
        ("decode chain", chain),
        ("severity", f.severity),
        ("offsets", f"characters {f.start}–{f.end} of the cell"),
        ("fingerprint", f.fingerprint),
    ]
    if f.allowlist is not None:
        a = f.allowlist
        items.append(("allowlist", f"entry {a.entry}, reviewed by {a.reviewer} on {a.reviewed}: {a.reason}"))
    rows = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in items)
    rows += f'<dt>context</dt><dd><code class="context">{e(f.context) or "(none)"}</code></dd>'
    return f'<dl class="detail">{rows}</dl>'


# Severities sort from the most to the least urgent.
_SEVERITY_RANK: dict[str, int] = {severity: rank for rank, severity in enumerate(Severity)}


def _findings_table(report: Report) -> str:
    if not report.findings:
        return '<p class="empty" id="no-findings">No findings.</p>'
    statuses = sorted({str(f.status) for f in report.findings})
    blocking = _blocking_verdicts(report)
    head = (
        '<div class="filters">'
        '<input type="search" id="f-q" placeholder="filter: shard, column, rule, preview…" aria-label="filter">'
        '<select id="f-verdict" aria-label="verdict"><option value="">all verdicts</option>'
        + "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in VERDICTS)
        + '</select><select id="f-status" aria-label="status"><option value="">all statuses</option>'
        + "".join(f'<option value="{e(s)}">{e(s)}</option>' for s in statuses)
        + '</select><label><input type="checkbox" id="f-blocking"> blocking only</label>'
        f'<span class="meta">showing <b id="f-shown">{len(report.findings)}</b> of {len(report.findings)}</span></div>'
    )
    cols = [("index", "#"), ("kind", "kind"), ("rule", "rule"), ("shard", "shard"), ("row", "row"),
            ("column", "column"), ("role", "role"), ("severity", "severity"), ("verdict", "verdict"),
            ("status", "status"), ("preview", "preview"), (None, "detail")]
    ths = "".join(f'<th data-key="{k}">{e(label)}</th>' if k else f"<th>{e(label)}</th>" for k, label in cols)
    body = []
    for i, f in enumerate(report.findings, 1):
        loc = f.location
        search = " ".join(
            [f.kind, f.rule_id, loc.shard, str(loc.row), loc.column, loc.role or "", str(f.verdict), str(f.status),
             f.preview, f.detail, f.allowlist.reason if f.allowlist else ""]
        ).lower()
        status = e(f.status) + (' <span class="blocking">BLOCKING</span>' if f.blocking else "")
        body.append(
            f'<tr class="finding" data-index="{i}" data-kind="{e(f.kind)}" data-rule="{e(f.rule_id)}" '
            f'data-shard="{e(loc.shard)}" data-row="{loc.row}" data-column="{e(loc.column)}" '
            f'data-role="{e(loc.role or "")}" data-severity="{_SEVERITY_RANK.get(f.severity, 9)}" '
            f'data-verdict="{e(f.verdict)}" data-status="{e(f.status)}" '
            f'data-blocking="{"true" if f.blocking else "false"}" data-preview="{e(f.preview)}" '
            f'data-fingerprint="{e(f.fingerprint)}" data-search="{e(search)}">'
            f'<td class="num">{i}</td><td>{e(f.kind)}</td><td>{e(f.rule_id)}</td><td class="wrap">{e(loc.shard)}</td>'
            f'<td class="num">{loc.row}</td><td '
            f'class="wrap"><code>{e(loc.column)}</code></td><td>{e(loc.role or "")}</td>'
            f'<td><span class="sev sev-{e(f.severity)}">{e(f.severity)}</span></td>'
            f'<td>{_pill(str(f.verdict), blocking)}</td><td>{status}</td><td><code '
            f'class="preview">{e(f.preview)}</code></td>'
            '<td><button type="button" class="toggle" aria-expanded="false" '
            f'aria-controls="detail-{i}">details</button>'
            f'</td></tr>'
            # Without JS every detail row stays visible; the script collapses them and moves each with its row.
            f'<tr class="detail-row" id="detail-{i}" data-index="{i}"><td colspan="{len(cols)}">{_detail(f)}</td></tr>'
        )
    return (f'{head}<table id="findings" data-total="{len(report.findings)}"><thead><tr>{ths}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _errors(report: Report) -> str:
    if not report.issues:
        return ""
    items = "".join(
        f'<tr class="issue" data-shard="{e(i.shard)}" data-kind="{e(i.kind)}"><td>{e(i.kind)}</td>'
        f'<td class="wrap">{e(issue_where(i))}</td><td>{e(i.message)}</td></tr>'
        for i in report.issues
    )
    return (f'<h2 id="errors-title">Errors ({len(report.issues)}): the scan is incomplete where these are</h2>'
            f'<table id="errors"><thead><tr><th>kind</th><th>where</th><th>message</th></tr></thead>'
            f"<tbody>{items}</tbody></table>")


def _problems(report: Report) -> str:
    """When the scan is incomplete, the problems right under the gate banner: a reader must not
    scroll past the findings to learn that part of the data was never read."""
    if not report.issues:
        return ""
    shown = report.issues[:MAX_PROBLEMS_ON_TOP]
    items = "".join(f"<li>{e(i.kind)}: {e(issue_where(i))}: {e(i.message)}</li>" for i in shown)
    more = len(report.issues) - len(shown)
    tail = f'<p class="meta">… and {more} more under Errors below.</p>' if more else ""
    return (f'<section class="problems" id="problems"><h2>⚠ Scan incomplete: {len(report.issues)} problem(s); '
            f'these parts were not fully read</h2><ul>{items}</ul>{tail}'
            '<p class="meta">Every problem is listed under Errors below.</p></section>')


MAX_PROBLEMS_ON_TOP = 5


def _allowlist(report: Report) -> str:
    allow = report.allowlist
    if allow is None:
        return ""
    out = [f'<h2>Allowlist</h2><p class="meta" id="allowlist-summary">{e(allow.path or "(no file)")}: '
           f"{allow.entries} entries, {len(allow.matched)} matched, {len(allow.stale)} stale, "
           f"{len(allow.expired)} expired</p>"]
    accepted = [(f, f.allowlist) for f in report.findings if f.allowlist is not None]
    if accepted:
        rows = "".join(
            f'<tr class="accepted"><td class="wrap">{e(f.location.shard)}</td><td class="num">{f.location.row}</td>'
            f"<td><code>{e(f.location.column)}</code></td><td>{e(f.rule_id)}</td>"
            f"<td><code class=\"preview\">{e(f.preview)}</code></td>"
            f"<td>{a.entry}</td><td>{e(a.reviewer)}</td><td>{e(a.reviewed)}</td>"
            f"<td>{e(a.reason)}</td></tr>"
            for f, a in accepted
        )
        out.append('<table id="allowlist-accepted"><thead><tr><th>shard</th><th>row</th><th>column</th><th>rule</th>'
                   "<th>preview</th><th>entry</th><th>reviewer</th><th>reviewed</th><th>reason</th></tr></thead>"
                   f"<tbody>{rows}</tbody></table>")
    stale = [("stale (matched nothing)", x) for x in allow.stale] + [("expired", x) for x in allow.expired]
    if stale:
        out.append('<ul id="allowlist-stale">' + "".join(
            f'<li class="stale">{e(label)}: {e(entry_text(x))}</li>' for label, x in stale) + "</ul>")
    return "".join(out)


def render(report: Report, _options: object = None) -> str:
    """The whole HTML document."""
    decision = report.decision
    n = summary_numbers(report)
    s = report.stats
    verdict = "PASS" if decision.passed else "FAIL"
    blocking = _blocking_verdicts(report)
    # The banner differs in symbol and pattern as well as colour: pass, fail, and incomplete (exit 3).
    if decision.passed:
        gate_class, mark = "pass", "✓"
    else:
        gate_class, mark = ("incomplete", "⚠") if decision.exit_code == 3 else ("fail", "✗")
    why = "".join(f"<li>{e(line)}</li>" for line in gate_why(report))
    cards = [
        ("shards", s.shards, False), ("rows", f"{s.rows:,}", False), ("string cells", f"{s.cells:,}", False),
        ("bytes", format_size(s.bytes), False), ("findings", n["findings"], False),
        ("blocking", n["blocking"], n["blocking"] > 0), ("allowlisted", n["allowlisted"], False),
        ("errors", n["errors"], n["errors"] > 0),
    ]
    if report.files is not None:
        files = report.files
        cards += [("files scanned", files.scanned, False), ("files excluded", files.excluded_total, False),
                  ("files not scanned", len(files.not_scanned), bool(files.not_scanned))]
    cards_html = "".join(
        f'<div class="card{" alert" if alert else ""}" '
        f'data-metric="{e(label)}"><b>{e(v)}</b><span>{e(label)}</span></div>'
        for label, v, alert in cards
    )
    title = f"shardscan audit: {verdict}"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="shardscan {e(report.tool_version)}">
<title>{e(title)}</title>
<style>{_CSS}</style>
<script>{_JS_ERRORS}</script>
</head>
<body>
<main>
<h1>shardscan audit</h1>
<div class="meta">shardscan {e(report.tool_version)} · rule set <code>{e(report.ruleset_digest)}</code> · scanned {e(report.scanned_at.isoformat(timespec="seconds"))} · {s.row_groups} row groups in {s.seconds:.2f}s</div>
<section class="gate {gate_class}" id="gate" data-passed="{str(decision.passed).lower()}" data-exit-code="{decision.exit_code}">
<div class="verdict"><span class="mark" aria-hidden="true">{mark}</span>{verdict} · exit {decision.exit_code}</div>
<div class="reason">{e(decision.reason)}</div>
<ul>{why}</ul>
</section>
{_problems(report)}
<div class="cards" id="summary">{cards_html}</div>
<h2>Findings per verdict and per shard</h2>
<div class="charts">
<div class="chart"><h3>per verdict</h3>{_bar_chart_verdicts(n["by_verdict"], blocking)}</div>
<div class="chart"><h3>per shard (shards with findings or errors)</h3>{_bar_chart_shards(report)}{_legend(blocking)}</div>
</div>
<h2>Findings ({n["findings"]})</h2>
{_findings_table(report)}
{_errors(report)}
{_allowlist(report)}
<footer>
<p>Verdicts: {"; ".join(f"<b>{e(v)}</b>: {e(VERDICT_MEANING[v])}" for v in VERDICTS)}.</p>
<p>Previews show the first four characters and the length; fingerprints are SHA-256 of the secret. This report never contains a secret in full.</p>
</footer>
<pre id="js-errors" data-count="0" hidden></pre>
<div id="js-state" data-ready="0" hidden></div>
</main>
<script>{_JS}</script>
</body>
</html>
"""  # noqa: E501 (embedded CSS, JS and HTML: a line break would change the document)

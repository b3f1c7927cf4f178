/// The console's style sheet and script, served from /console/assets: nothing is loaded from
/// another host, and the Content-Security-Policy allows nothing else.
enum Assets {
    /// Plain CSS; narrow screens stack the figures and scroll wide tables inside their own box,
    /// never the page.
    static let css = """
        :root { --ink: #1d2330; --muted: #5b6474; --line: #d8dde6; --bg: #f6f7f9; --accent: #1f5fbf;
                --ok: #1e7a3c; --warn: #9a6200; --bad: #b3261e; font-family: system-ui, sans-serif; color: var(--ink); }
        * { box-sizing: border-box; }
        body { margin: 0; background: var(--bg); }
        header { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding: .75rem 1rem;
                 background: #fff; border-bottom: 1px solid var(--line); }
        .brand { font-weight: 700; color: var(--ink); text-decoration: none; }
        nav { display: flex; flex-wrap: wrap; gap: .25rem 1rem; }
        nav a { color: var(--accent); text-decoration: none; }
        nav a[aria-current] { font-weight: 700; text-decoration: underline; }
        .logout { margin-left: auto; display: flex; gap: .5rem; align-items: center; }
        main { max-width: 1200px; margin: 0 auto; padding: 1rem; }
        section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 1rem; margin-bottom: 1rem; }
        h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 0; } h3 { font-size: 1rem; }
        .figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(9rem, 1fr)); gap: .75rem; margin: 0 0 1rem; }
        .figures div, .facts div { min-width: 0; }
        .figures dt, .facts dt { color: var(--muted); font-size: .85rem; }
        .figures dd { margin: 0; font-size: 1.6rem; font-variant-numeric: tabular-nums; }
        .facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(14rem, 1fr)); gap: .5rem 1rem; }
        .facts dd { margin: 0; overflow-wrap: anywhere; }
        figure { margin: 0 0 1rem; }
        figcaption { color: var(--muted); font-size: .85rem; }
        .plot { display: grid; grid-template-columns: auto minmax(0, 1fr); column-gap: .35rem; }
        .y-axis { display: flex; flex-direction: column; justify-content: space-between; text-align: right; height: 120px; }
        .y-axis, .x-axis, .legend { color: var(--muted); font-size: .75rem; font-variant-numeric: tabular-nums; }
        .x-axis { display: flex; justify-content: space-between; }
        .chart { width: 100%; height: 120px; background: var(--bg); border: 1px solid var(--line); }
        .chart polyline { fill: none; stroke: var(--accent); stroke-width: 2; stroke-linecap: round; vector-effect: non-scaling-stroke; }
        .chart .grid { stroke: var(--line); stroke-dasharray: 4 4; vector-effect: non-scaling-stroke; }
        .chart.bars, .bars-axis { height: 80px; } .chart rect { fill: var(--accent); }
        .legend { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; padding: 0; margin: .25rem 0 0; }
        .legend li::before { content: ""; display: inline-block; width: .8rem; height: .2rem; margin-right: .3rem;
                             vertical-align: middle; background: currentColor; }
        .chart polyline.s-verified { stroke: var(--ok); } .legend .s-verified { color: var(--ok); }
        .chart polyline.s-retried { stroke: var(--warn); } .legend .s-retried { color: var(--warn); }
        .chart polyline.s-dead { stroke: var(--bad); } .legend .s-dead { color: var(--bad); }
        .chart polyline.s-1 { stroke: #6b3fa0; } .legend .s-1 { color: #6b3fa0; }
        .chart polyline.s-2 { stroke: #0f7c80; } .legend .s-2 { color: #0f7c80; }
        .chart polyline.s-3 { stroke: #a0522d; } .legend .s-3 { color: #a0522d; }
        progress { width: 100%; height: 1rem; appearance: none; border: none; background: #e6e6e6; }
        progress::-webkit-progress-bar { background: #e6e6e6; } progress::-webkit-progress-value { background: var(--ok); }
        progress::-moz-progress-bar { background: var(--ok); }
        progress.paused::-webkit-progress-value { background: var(--warn); } progress.paused::-moz-progress-bar { background: var(--warn); }
        .gate { font-weight: 600; } .gate.open { color: var(--ok); } .gate.paused { color: var(--warn); } .gate.halted { color: var(--bad); }
        .banner { border: 2px solid; border-radius: 4px; padding: .25rem .75rem; margin-bottom: 1rem; overflow-wrap: anywhere; }
        .banner p { margin: .35rem 0; } .banner .what { font-weight: 600; } .banner.halted { border-color: var(--bad); background: #fdecea; }
        .banner.paused { border-color: var(--warn); background: #fff4e0; }
        .notice { background: #e8f1fd; border: 1px solid #b9d2f5; padding: .5rem .75rem; border-radius: 4px; }
        .problem { color: var(--bad); }
        .hint, .muted { color: var(--muted); font-size: .9rem; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        caption { text-align: left; color: var(--muted); padding-bottom: .25rem; }
        .passes tr.night { background: var(--bg); } .passes td.pass { padding-left: 1.5rem; color: var(--muted); }
        table + table, .scroll + table, table + .scroll { margin-top: 1.25rem; } .scroll + figure { margin-top: .75rem; }
        .scroll { overflow-x: auto; max-width: 100%; }
        tr.silent .last-seen { color: var(--bad); font-weight: 600; }
        .message { overflow-wrap: anywhere; max-width: 28rem; }
        form.inline, .actions { display: inline-flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: 0 1rem .5rem 0; }
        .filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin-bottom: 1rem; }
        .filters label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); }
        .row-actions { display: flex; gap: .25rem; } .row-actions form { margin: 0; }
        .letters { list-style: none; padding: 0; margin: 0; background: #fff; border: 1px solid var(--line); border-radius: 6px; }
        .letters li { display: flex; align-items: center; gap: .5rem; padding: .25rem .5rem; border-bottom: 1px solid var(--line);
                      white-space: nowrap; min-width: 0; }
        .letters .message { flex: 1; min-width: 0; overflow: hidden; text-overflow: ellipsis; max-width: none; }
        .letters form { margin: 0; } .letters button { padding: .1rem .5rem; font-size: .85rem; }
        .letters form.job-actions { display: flex; flex-wrap: wrap; gap: .25rem; }
        .letters .kind { font-family: ui-monospace, monospace; font-size: .85rem; }
        .letters.compact li { padding: 0 .5rem; font-size: .85rem; line-height: 1.4; align-items: start; }
        .letters.compact li > input { margin: .2rem 0 0; }
        .letters details { flex: 1; min-width: 0; }
        .letters summary { display: flex; gap: .5rem; align-items: baseline; cursor: pointer; padding: 1px 0; list-style: none; }
        .letters summary::-webkit-details-marker { display: none; }
        .letters summary::before { content: "▸"; color: var(--muted); }
        .letters details[open] summary::before { content: "▾"; }
        .letters .letter { white-space: normal; padding: .25rem 0 .5rem; }
        .letters .full-message { overflow-wrap: anywhere; margin: 0 0 .5rem; }
        .pages { display: flex; gap: 1rem; }
        input, select { font: inherit; padding: .35rem .5rem; border: 1px solid var(--line); border-radius: 4px; max-width: 100%; }
        button { font: inherit; padding: .35rem .75rem; border: 1px solid var(--accent); background: var(--accent); color: #fff;
                 border-radius: 4px; cursor: pointer; }
        button.danger { background: var(--bad); border-color: var(--bad); }
        .login { display: flex; flex-direction: column; gap: .5rem; max-width: 24rem; }
        .timeline { padding-left: 1.25rem; } .timeline li { margin-bottom: .25rem; }
        code { overflow-wrap: anywhere; }
        @media (max-width: 600px) {
          .figures dd { font-size: 1.3rem; }
          .logout { margin-left: 0; }
          main { padding: .5rem; }
          .letters .when { display: none; }
          .letters li:has(> form.job-actions) { flex-wrap: wrap; white-space: normal; }
        }
        """

    /// Live refresh: every few seconds the overview fetches itself and swaps in the part marked
    /// `data-refresh`, so the forms and what an operator types stay put.
    static let javascript = """
        (function () {
          var live = document.querySelector('[data-refresh]');
          if (!live) return;
          var seconds = Number(live.getAttribute('data-refresh')) || 5;
          setInterval(function () {
            fetch(location.href, { credentials: 'same-origin', cache: 'no-store' })
              .then(function (r) { return r.ok && !r.redirected ? r.text() : null; })
              .then(function (html) {
                if (!html) return;
                var fresh = new DOMParser().parseFromString(html, 'text/html').querySelector('[data-refresh]');
                if (fresh) live.innerHTML = fresh.innerHTML;
              })
              .catch(function () {});
          }, seconds * 1000);
        })();
        """
}

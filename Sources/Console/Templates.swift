import Mustache

/// The console's pages as Mustache templates, compiled into the binary so that an installed
/// `receiptfleet` needs no files beside it. Every page extends `layout`; `{{x}}` escapes HTML.
enum Templates {
    static func library() throws -> MustacheLibrary {
        var library = MustacheLibrary()
        for (name, text) in [
            ("layout", layout), ("login", login), ("error", error), ("overview", overview), ("confirm-resume", confirmResume), ("confirm-extend", confirmExtend), ("confirm-replay", confirmReplay), ("confirm-waiting", confirmWaiting),
            ("dead", dead), ("queues", queues), ("workers", workers), ("audit", audit), ("filter-fields", filterFields), ("subscriptions", subscriptions), ("webhooks", webhooks), ("timings", timings), ("timing-table", timingTable), ("chart", chart), ("bars", bars), ("window-links", windowLinks), ("pass-cells", passCells),
        ] {
            try library.register(text, named: name)
        }
        return library
    }

    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{chrome.title}} · ReceiptFleet</title>
        <link rel="stylesheet" href="/console/assets/console.css">
        <script src="/console/assets/console.js" defer></script>
        </head>
        <body>
        <header>
          <a class="brand" href="/console">ReceiptFleet</a>
          {{#chrome.operatorName}}
          <nav>
            <a href="/console"{{#chrome.onOverview}} aria-current="page"{{/chrome.onOverview}}>Overview</a>
            <a href="/console/queues"{{#chrome.onQueues}} aria-current="page"{{/chrome.onQueues}}>Queues</a>
            <a href="/console/dead"{{#chrome.onDead}} aria-current="page"{{/chrome.onDead}}>Dead letters</a>
            <a href="/console/subscriptions"{{#chrome.onSubscriptions}} aria-current="page"{{/chrome.onSubscriptions}}>Subscriptions</a>
            <a href="/console/workers"{{#chrome.onWorkers}} aria-current="page"{{/chrome.onWorkers}}>Workers</a>
            <a href="/console/timings"{{#chrome.onTimings}} aria-current="page"{{/chrome.onTimings}}>Timings</a>
            <a href="/console/webhooks"{{#chrome.onWebhooks}} aria-current="page"{{/chrome.onWebhooks}}>Webhooks</a>
            <a href="/console/audit"{{#chrome.onAudit}} aria-current="page"{{/chrome.onAudit}}>Audit</a>
          </nav>
          <form method="post" action="/console/logout" class="logout">
            <input type="hidden" name="csrf" value="{{chrome.csrf}}">
            <span>{{chrome.operatorName}}</span> <button type="submit">Log out</button>
          </form>
          {{/chrome.operatorName}}
        </header>
        <main>
        {{#chrome.banners}}
        <div class="banner {{stateClass}}" role="alert" id="{{id}}">
          <p class="what" id="{{id}}-what">{{what}}</p>
          <p id="{{id}}-why">Reason: {{why}}</p>
          <p id="{{id}}-next">Next: {{next}}</p>
          {{#canResume}}<form method="post" action="/console/gate/resume" class="inline">
            <input type="hidden" name="csrf" value="{{chrome.csrf}}">{{#app}}<input type="hidden" name="app" value="{{app}}">{{/app}}
            <button type="submit">Resume{{#app}} {{app}}{{/app}}…</button>
          </form>{{/canResume}}
        </div>
        {{/chrome.banners}}
        {{#notice}}<p class="notice" role="status" id="notice">{{notice}}</p>{{/notice}}
        {{$main}}{{/main}}
        </main>
        </body>
        </html>
        """

    static let login = """
        {{<layout}}{{$main}}
        <h1>Log in</h1>
        {{#problem}}<p class="problem" role="alert" id="problem">{{problem}}</p>{{/problem}}
        <form method="post" action="/console/login" class="login">
          <label for="token">Operator token</label>
          <input id="token" name="token" type="password" autocomplete="current-password" required>
          <button type="submit">Log in</button>
        </form>
        <p class="hint">Operator tokens come from RECEIPTFLEET_CONSOLE_TOKENS or console-tokens-file (NAME:TOKEN); API tokens do not open the console.</p>
        {{/main}}{{/layout}}
        """

    static let error = """
        {{<layout}}{{$main}}
        <h1 id="error-title">{{heading}}</h1>
        <p class="problem" id="error-message">{{message}}</p>
        <p><a href="{{back}}">{{backLabel}}</a></p>
        {{/main}}{{/layout}}
        """

    static let overview = """
        {{<layout}}{{$main}}
        <div id="live" data-refresh="5">
        <section aria-labelledby="queue-h">
          <h2 id="queue-h">Queue</h2>
          <dl class="figures">
            <div><dt>Ready</dt><dd id="queue-ready">{{queue.jobs.ready}}</dd></div>
            <div><dt>In flight</dt><dd id="queue-reserved">{{queue.jobs.reserved}}</dd></div>
            <div><dt>Delayed</dt><dd id="queue-delayed">{{delayed}}</dd></div>
            <div><dt>Dead</dt><dd id="queue-dead"><a href="/console/dead">{{queue.jobs.dead}}</a></dd></div>
            <div><dt>Oldest job</dt><dd id="queue-oldest">{{oldestAge}}</dd></div>
            <div><dt>Live workers</dt><dd id="queue-workers">{{queue.state.liveWorkers}}</dd></div>
          </dl>
          {{#queue.state.silentWorkers}}
          <p class="gate halted" id="silent-{{process}}">Worker {{process}} has not reported for {{silentSeconds}} s: stopped, frozen,
            cut off from Redis or dead. It holds {{held}}. <a href="/console/workers">Workers</a></p>
          {{/queue.state.silentWorkers}}
          {{#queue.state.starvedWorkers}}
          <p class="gate paused" id="starved-{{process}}">Worker {{process}} gave up {{slotsGivenUp}} rate-limit slots, the last {{lastGivenUpSecondsAgo}} s ago:
            its threads wake too late for them (starved of CPU). Give it more CPU or fewer threads.</p>
          {{/queue.state.starvedWorkers}}
          <p class="windows" id="windows">Charts over the {{> window-links}}</p>
          <figure id="depth-chart">
            <figcaption>Jobs not yet done, {{windowTitle}}: {{depthChart.point}}</figcaption>
            {{#depthChart}}{{> chart}}{{/depthChart}}
          </figure>
          <figure id="jobs-chart">
            <figcaption>Jobs per minute, {{windowTitle}}: verified, retried, dead; {{jobsChart.point}}</figcaption>
            {{#jobsChart}}{{> chart}}{{/jobsChart}}
          </figure>
          <h3>The latest scheduler pass</h3>
          {{#run}}
          <p id="run" class="gate {{stateClass}}">Pass {{passID}} ({{found}} due, {{enqueued}} enqueued): <span id="run-verified">{{verified}} verified</span>,
            <span id="run-dead">{{dead}} dead</span>, <span id="run-to-go">{{toGo}} to go</span>. {{eta}}</p>
          <progress class="{{stateClass}}" max="{{enqueued}}" value="{{settled}}">{{percent}} %</progress>
          {{/run}}
          {{^run}}<p id="run">No scheduler pass is recorded yet.</p>{{/run}}
          {{^empty(nights)}}
          <p class="hint">Each pass is kept current until its last job has ended (a replayed dead letter is to go again).
            Apple calls and events are the whole fleet's while it ran, up to now if not finished; a night counts them
            once over all its passes.</p>
          <div class="scroll">
          <table id="passes" class="passes">
            <caption>Scheduler passes by night</caption>
            <thead><tr><th>Night, pass</th><th>Started</th><th>Due</th><th>Jobs</th><th>Verified</th><th>Dead</th><th>Replayed</th>
              <th>Took</th><th>Apple calls</th><th>Events</th></tr></thead>
            {{#nights}}
            <tbody>
            {{#night}}<tr class="night" data-night="{{id}}"><th scope="rowgroup">{{name}}</th>{{> pass-cells}}</tr>{{/night}}
            {{#passes}}<tr data-run="{{id}}"><td class="pass">{{name}}</td>{{> pass-cells}}</tr>{{/passes}}
            {{#earlier}}<tr><td class="pass" colspan="10">{{earlier}}</td></tr>{{/earlier}}
            </tbody>
            {{/nights}}
          </table>
          </div>
          {{/empty(nights)}}
        </section>

        <section aria-labelledby="apple-h">
          <h2 id="apple-h">Apple</h2>
          <p id="gate" class="gate {{gate.cssClass}}">{{gate.text}}</p>
          {{#gate.serverAPIHalt}}<p class="gate halted" id="server-api-gate">App Store Server API halted: {{gate.serverAPIHalt}}</p>{{/gate.serverAPIHalt}}
          <p id="notification-recovery">Missed notifications: {{notificationRecovery}}</p>
          <dl class="figures">
            <div><dt>Requests per second</dt><dd id="apple-rate">{{requestRate}}</dd></div>
            <div><dt>Fleet-wide limit</dt><dd id="apple-limit">{{rateLimit}}</dd></div>
            <div><dt>Verified, last minute</dt><dd id="apple-verified">{{verifiedLastMinute}}</dd></div>
          </dl>
          <figure id="rate-chart">
            <figcaption>Requests to Apple per second, {{windowTitle}} (limit {{rateLimit}}); {{rateChart.point}}</figcaption>
            {{#rateChart}}{{> chart}}{{/rateChart}}
          </figure>
          <figure id="answers-chart">
            <figcaption>Apple's answers per minute, {{windowTitle}}, by status; {{answersChart.point}}</figcaption>
            {{#answersChart}}{{> chart}}{{/answersChart}}
          </figure>
          <div class="scroll">
            <table id="apps">
              <caption>Apps (each halts alone when Apple refuses its shared secret)</caption>
              <thead><tr><th>App</th><th>State</th><th>Verified, last minute</th><th>Schedule</th><th>Fresh within (p99, last day)</th><th>Checks a subscription, last day</th></tr></thead>
              <tbody>
              {{#apps}}<tr><td>{{name}}</td><td class="gate {{stateClass}}">{{state}}{{#halted}}
                <form method="post" action="/console/gate/resume" class="inline">
                  <input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="app" value="{{name}}">
                  <button type="submit" id="resume-app-{{name}}">Resume {{name}}</button>
                </form>{{/halted}}</td><td>{{verified}}</td><td class="gate {{scheduleClass}}">{{schedule}}</td><td>{{freshness}}</td><td>{{checks}}</td></tr>{{/apps}}
              </tbody>
            </table>
          </div>
          <table id="apple-mix">
            <caption>Answers in the last minute</caption>
            <thead><tr><th>Status</th><th>Meaning</th><th>Answers</th></tr></thead>
            <tbody>
            {{#answers}}<tr><td>{{status}}</td><td>{{meaning}}</td><td>{{count}}</td></tr>{{/answers}}
            {{^answers}}<tr><td colspan="3">No answers in the last minute.</td></tr>{{/answers}}
            </tbody>
          </table>
        </section>
        </div>

        <section aria-labelledby="gate-h">
          <h2 id="gate-h">Pause and resume</h2>
          {{^gate.stopped}}
          <form method="post" action="/console/gate/pause" class="inline">
            <input type="hidden" name="csrf" value="{{chrome.csrf}}">
            <label for="reason">Reason</label>
            <input id="reason" name="reason" value="paused from the console" maxlength="200">
            <button type="submit" id="pause">Pause the fleet</button>
          </form>
          <p class="hint">Pausing halts every worker, as <code>receiptfleet pause</code> does; jobs wait, uncharged, until you resume.</p>
          {{/gate.stopped}}
          {{#gate.stopped}}
          <form method="post" action="/console/gate/resume" class="inline">
            <input type="hidden" name="csrf" value="{{chrome.csrf}}">
            <button type="submit" id="resume">Resume</button>
          </form>
          <p class="hint">The fleet is stopped (see the banner above); jobs wait, uncharged, until it runs again.</p>
          {{/gate.stopped}}
        </section>
        {{/main}}{{/layout}}
        """

    /// The figures of one row of the scheduler's passes (`OverviewView.PassRow`): a night's or a pass's.
    static let passCells = """
        <td>{{started}}</td><td>{{due}}</td><td>{{jobs}}</td><td>{{verified}}</td><td class="{{deadClass}}">{{dead}}</td>\
        <td>{{replayed}}</td><td>{{took}}</td><td>{{appleCalls}}</td><td>{{events}}</td>
        """

    /// One line chart: `points` in a 600 × 120 box, drawn as SVG (no script, no other host).
    static let chart = """
        <div class="plot">
          <div class="y-axis" aria-hidden="true"><span>{{peak}}</span><span>{{middle}}</span><span>0</span></div>
          <svg class="chart" viewBox="0 0 600 120" preserveAspectRatio="none" role="img" aria-label="{{label}}">
            <line class="grid" x1="0" y1="60" x2="600" y2="60" />
            {{#lines}}<polyline class="{{style}}" points="{{points}}"><title>{{name}}</title></polyline>{{/lines}}
          </svg>
          <div></div>
          <div class="x-axis" aria-hidden="true"><span>{{start}}</span><span>{{halfway}}</span><span>{{end}}</span></div>
        </div>
        {{#hasLegend}}<ul class="legend">{{#lines}}<li class="{{style}}">{{name}}</li>{{/lines}}</ul>{{/hasLegend}}
        """

    /// The other windows a page may be seen over (`WindowLink`), the current one in bold.
    static let windowLinks = """
        {{#windows}}{{#current}}<strong>{{title}}</strong>{{/current}}{{^current}}<a href="{{link}}">{{title}}</a>{{/current}}{{^last}} · {{/last}}{{/windows}}
        """

    /// A distribution (`TimingsView.Distribution`): one bar per bucket, in a 600 × 80 box, drawn as SVG.
    static let bars = """
        <div class="plot">
          <div class="y-axis bars-axis" aria-hidden="true"><span>{{most}}</span><span>0</span></div>
          <svg class="chart bars" viewBox="0 0 600 80" preserveAspectRatio="none" role="img" aria-label="{{label}}">
            {{#bars}}<rect x="{{x}}" y="{{y}}" width="{{width}}" height="{{height}}"><title>{{title}}</title></rect>{{/bars}}
          </svg>
          <div></div>
          <div class="x-axis" aria-hidden="true"><span>{{shortest}}</span><span>{{longest}}</span></div>
        </div>
        """

    /// A table of timings (`TimingsView.Table`): a row per series, its count, p50, p99 and mean.
    static let timingTable = """
        <div class="scroll">
        <table id="{{id}}">
          <thead><tr><th>{{what}}</th><th>{{counted}}</th><th>p50</th><th>p99</th><th>Mean</th></tr></thead>
          <tbody>{{#rows}}<tr data-series="{{series}}"><td>{{name}}</td><td>{{count}}</td><td>{{p50}}</td><td>{{p99}}</td><td>{{mean}}</td></tr>{{/rows}}</tbody>
        </table>
        </div>
        """

    static let timings = """
        {{<layout}}{{$main}}
        <h1>Timings</h1>
        <p class="windows" id="windows">Over the {{> window-links}}</p>
        <p class="hint">Fleet-wide: every worker, <code>serve</code> and <code>console</code> process adds what it timed to Redis every
          10 s. Percentiles are placed within buckets 19 % wide; one-shot commands (<code>verify</code>, <code>subscriptions extend</code>) are not counted.</p>
        <section aria-labelledby="jobs-h">
          <h2 id="jobs-h">Jobs, from first enqueue to done</h2>
          <p class="hint">From when a job was first queued (retries and pauses included) until a worker acked it; dead jobs are not done.</p>
          {{#jobs}}{{> timing-table}}{{/jobs}}
          <figure id="jobs-timing-chart">
            <figcaption>Time from first enqueue to done, {{windowTitle}}: p50 and p99; {{jobsChart.point}}</figcaption>
            {{#jobsChart}}{{> chart}}{{/jobsChart}}
          </figure>
          {{#jobsDistribution}}<figure id="jobs-distribution">
            <figcaption>How long jobs took, {{windowTitle}}: jobs done per bucket, shortest to longest</figcaption>
            {{> bars}}
          </figure>{{/jobsDistribution}}
        </section>
        <section aria-labelledby="apple-timings-h">
          <h2 id="apple-timings-h">Apple, per endpoint</h2>
          <p class="hint">One call each: from the request leaving to Apple's answer, or to the call failing (a 30 s timeout counts as 30 s).</p>
          {{#empty(endpoints.rows)}}<p id="no-apple-timings">No call to Apple was timed {{windowTitle}}.</p>{{/empty(endpoints.rows)}}
          {{^empty(endpoints.rows)}}
          {{#endpoints}}{{> timing-table}}{{/endpoints}}
          <figure id="apple-timing-chart">
            <figcaption>Apple's p99 per endpoint, {{windowTitle}}; {{appleChart.point}}</figcaption>
            {{#appleChart}}{{> chart}}{{/appleChart}}
          </figure>
          {{#appleDistributions}}<figure class="distribution" data-series="{{series}}">
            <figcaption>How long {{name}} took, {{windowTitle}}: calls per bucket, shortest to longest</figcaption>
            {{> bars}}
          </figure>{{/appleDistributions}}
          {{/empty(endpoints.rows)}}
        </section>
        {{/main}}{{/layout}}
        """

    static let confirmResume = """
        {{<layout}}{{$main}}
        <h1>Resume from a halt?</h1>
        {{#halt}}
        <p class="problem" id="halt-reason">{{what}} Reason: {{why}}</p>
        <p id="halt-next">{{next}}{{#haltsAgainIfEarly}} Resuming before then halts it again.{{/haltsAgainIfEarly}}</p>
        <form method="post" action="/console/gate/resume">
          <input type="hidden" name="csrf" value="{{chrome.csrf}}">
          <input type="hidden" name="confirm" value="yes">
          {{#app}}<input type="hidden" name="app" value="{{app}}">{{/app}}
          <button type="submit" id="confirm-resume">Resume from the halt</button>
          <a href="/console">Cancel</a>
        </form>
        {{/halt}}
        {{/main}}{{/layout}}
        """

    static let confirmExtend = """
        {{<layout}}{{$main}}
        <h1>Extend the renewal date of subscription {{id}}?</h1>
        <p>original_transaction_id {{originalTransactionID}}, product {{product}}.</p>
        {{#refusal}}<p class="problem" id="extend-refusal">{{refusal}}</p><a href="/console/subscriptions/{{id}}">Back</a>{{/refusal}}
        {{#ask}}
        <p id="extend-ask">{{ask}}</p>
        <form method="post" action="/console/subscriptions/{{id}}/extend">
          <input type="hidden" name="csrf" value="{{chrome.csrf}}">
          <input type="hidden" name="days" value="{{days}}">
          <input type="hidden" name="reason" value="{{reason}}">
          <input type="hidden" name="confirm" value="yes">
          <input type="hidden" name="confirmation" value="{{confirmation}}">
          <button type="submit" id="confirm-extend">Ask Apple to extend it</button>
          <a href="/console/subscriptions/{{id}}">Cancel</a>
        </form>
        {{/ask}}
        {{/main}}{{/layout}}
        """

    static let dead = """
        {{<layout}}{{$main}}
        <h1>Dead letters</h1>
        <form method="get" action="/console/dead" class="filters">
          <label>Error class <input name="error_class" value="{{filter.errorClass}}" placeholder="apple.21002"></label>
          <label>Night or pass <input name="run" value="{{filter.run}}" placeholder="2026-11-24 or 2026-11-24/2"></label>
          <label>Subscription <input name="subscription" value="{{filter.subscription}}" inputmode="numeric"></label>
          <label>Text <input name="q" value="{{filter.text}}" placeholder="timed out" maxlength="200" id="dead-text"></label>
          <button type="submit" id="filter-dead">Filter</button>
        </form>
        {{^empty(kinds)}}
        <div class="scroll">
        <table id="dead-kinds">
          <caption>Every dead letter by kind</caption>
          <thead><tr><th>Kind</th><th>Letters</th><th></th></tr></thead>
          <tbody>
          {{#kinds}}<tr data-kind="{{errorClass}}"><td><a href="{{link}}">{{errorClass}}</a> <span class="muted meaning">{{meaning}}</span></td><td>{{count}}</td>
            <td><form method="post" action="/console/dead/replay" class="inline"><input type="hidden" name="csrf" value="{{chrome.csrf}}">
              <input type="hidden" name="error_class" value="{{errorClass}}"><input type="hidden" name="run" value="{{filter.run}}"><input type="hidden" name="subscription" value="{{filter.subscription}}"><input type="hidden" name="q" value="{{filter.text}}">
              <button type="submit" class="replay-kind">{{replay}}</button></form></td></tr>{{/kinds}}
          </tbody>
        </table>
        </div>
        {{/empty(kinds)}}
        <p id="dead-count">{{summary}}</p>
        {{^empty(letters)}}
        <div class="actions">
          <form method="post" action="/console/dead/replay" class="inline">
            <input type="hidden" name="csrf" value="{{chrome.csrf}}">
            {{#filter}}{{> filter-fields}}{{/filter}}
            <button type="submit" id="replay-matching">Replay {{scope}}</button>
          </form>
          <form method="post" action="/console/dead/purge" class="inline">
            <input type="hidden" name="csrf" value="{{chrome.csrf}}">
            {{#filter}}{{> filter-fields}}{{/filter}}
            <label><input type="checkbox" name="confirm" value="yes" required> I mean it</label>
            <button type="submit" id="purge-matching" class="danger">Purge {{scope}}</button>
          </form>
        </div>
        <form method="post" action="/console/dead/replay" id="dead-selected" class="actions">
          <input type="hidden" name="csrf" value="{{chrome.csrf}}">
          With the ticked letters: <button type="submit" id="replay-selected">Replay…</button>
          <button type="submit" formaction="/console/dead/purge" id="purge-selected" class="danger">Purge…</button>
        </form>
        <ul id="dead-letters" class="letters compact">
          {{#letters}}
          <li data-id="{{id}}"><input type="checkbox" name="id" value="{{id}}" form="dead-selected" aria-label="this letter">
            <details>
              <summary><span class="subject">{{#subscriptionID}}{{subscriptionID}}{{/subscriptionID}}{{^subscriptionID}}not a job{{/subscriptionID}}</span>
                <span class="kind">{{errorClass}}</span><span class="muted">×{{attempts}}</span>
                <span class="message">{{message}}</span><span class="muted when">{{buried}}</span></summary>
              <div class="letter">
                <p class="full-message">{{message}}</p>
                <dl class="facts">
                  <div><dt>Subscription</dt><dd>{{#subscriptionID}}<a href="/console/subscriptions/{{subscriptionID}}">{{subscriptionID}}</a>{{/subscriptionID}}{{^subscriptionID}}not a job{{/subscriptionID}}</dd></div>
                  <div><dt>Run</dt><dd>{{run}}</dd></div>
                  <div><dt>Attempts</dt><dd>{{attempts}}</dd></div>
                  <div><dt>First failed</dt><dd>{{firstFailed}}</dd></div>
                  <div><dt>Last failed</dt><dd>{{lastFailed}}</dd></div>
                  <div><dt>Buried</dt><dd>{{buried}}</dd></div>
                  <div><dt>Job</dt><dd><code>{{job}}</code></dd></div>
                  <div><dt>Letter</dt><dd><code>{{id}}</code></dd></div>
                </dl>
                <div class="row-actions">
                  <form method="post" action="/console/dead/replay"><input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="id" value="{{id}}"><button type="submit" class="replay-one">Replay</button></form>
                  <form method="post" action="/console/dead/purge"><input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="id" value="{{id}}"><input type="hidden" name="confirm" value="yes"><button type="submit" class="danger">Purge</button></form>
                </div>
              </div>
            </details>
          </li>
          {{/letters}}
        </ul>
        {{/empty(letters)}}
        <p class="pages">{{#firstPage}}<a href="{{firstPage}}" id="first-page">← the oldest</a>{{/firstPage}}
          {{#nextPage}}<a href="{{nextPage}}" id="next-page">the next {{pageSize}} →</a>{{/nextPage}}</p>
        {{/main}}{{/layout}}
        """

    static let queues = """
        {{<layout}}{{$main}}
        <h1>Queues</h1>
        <section aria-labelledby="queues-h">
          <h2 id="queues-h">Depth and age</h2>
          <div class="scroll">
          <table id="queues">
            <thead><tr><th>Queue</th><th>Jobs</th><th>Held by workers</th><th>Oldest</th></tr></thead>
            <tbody>
            {{#queues}}<tr id="{{id}}"><td>{{#link}}<a href="{{link}}">{{name}}</a>{{/link}}{{^link}}{{name}}{{/link}} <span class="muted">{{what}}</span></td>
              <td class="jobs">{{jobs}}</td><td class="in-flight">{{inFlight}}</td><td class="oldest">{{oldest}}</td></tr>{{/queues}}
            </tbody>
          </table>
          </div>
          <p id="oldest-job">{{oldestJob}}</p>
          <p class="hint">A ready queue's oldest is how long the next job a worker takes has waited in it (since it was enqueued, came back
            from waiting for a time, or was replayed).</p>
        </section>
        <section aria-labelledby="breakdown-h">
          <h2 id="breakdown-h">By app, backend and priority</h2>
          <p id="breakdown-scope" class="hint">{{breakdownScope}}</p>
          {{^empty(breakdown)}}
          <div class="scroll">
          <table id="queue-breakdown">
            <thead><tr><th>App</th><th>Backend</th><th>Priority</th><th>Ready</th><th>Held by workers</th><th>Waiting for a time</th><th>Oldest, first enqueued</th></tr></thead>
            <tbody>
            {{#breakdown}}<tr data-app="{{app}}" data-backend="{{backend}}" data-priority="{{priority}}"><td>{{app}}</td><td>{{backend}}</td><td>{{priority}}</td>
              <td class="ready">{{ready}}</td><td class="in-flight">{{inFlight}}</td><td class="waiting">{{waiting}}</td><td>{{oldest}}</td></tr>{{/breakdown}}
            </tbody>
          </table>
          </div>
          {{/empty(breakdown)}}
          {{#empty(breakdown)}}<p id="no-jobs">No job is queued.</p>{{/empty(breakdown)}}
        </section>
        {{/main}}{{/layout}}
        """

    static let workers = """
        {{<layout}}{{$main}}
        <h1>Workers</h1>
        <section aria-labelledby="processes-h">
          <h2 id="processes-h">Processes</h2>
          {{#empty(processes)}}<p id="no-processes">No worker process reported in the last 10 minutes, or each stopped cleanly.</p>{{/empty(processes)}}
          {{^empty(processes)}}
          {{#processes}}{{#silent}}<p class="gate halted silent-note" data-process="{{name}}">{{host}}, pid {{pid}}: {{silent}}
            {{#holdsJobs}}In hand: {{#inHand}}<a href="/console/subscriptions/{{.}}">{{.}}</a> {{/inHand}}{{inHandMore}}{{/holdsJobs}}</p>{{/silent}}{{/processes}}
          <div class="scroll">
          <table id="processes">
            <thead><tr><th>Host</th><th>Pid</th><th>Threads</th><th>Started</th><th>Last heartbeat</th><th>Jobs done</th><th>Subscriptions in hand</th></tr></thead>
            <tbody>
            {{#processes}}<tr data-process="{{name}}"{{#silent}} class="silent"{{/silent}}><td>{{host}}</td><td>{{pid}}</td><td>{{threads}}</td><td>{{started}}</td>
              <td class="last-seen">{{lastSeen}}</td>
              <td class="jobs-done">{{jobsDone}}</td>
              <td class="in-hand">{{#inHand}}<a href="/console/subscriptions/{{.}}">{{.}}</a> {{/inHand}}{{^inHand}}none{{/inHand}} {{inHandMore}}</td></tr>{{/processes}}
            </tbody>
          </table>
          </div>
          {{/empty(processes)}}
        </section>
        <section aria-labelledby="delayed-h">
          <h2 id="delayed-h">Waiting for a time</h2>
          <p class="hint">Retries after their backoff, jobs a pause postponed, and checks scheduled after a renewal.</p>
          <form method="get" action="/console/workers" class="filters" id="waiting-filter">
            <label>Reason <select name="reason">{{#reasons}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/reasons}}</select></label>
            <label>Run <input name="run" value="{{filter.run}}" placeholder="2026-11-28" maxlength="64"></label>
            <label>Tries <select name="tries">{{#triesChoices}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/triesChoices}}</select></label>
            <button type="submit" id="filter-waiting">Filter</button>
          </form>
          <p id="delayed-count">{{delayedSummary}}</p>
          {{#anyWaiting}}
          <form method="post" action="/console/workers/waiting" id="waiting-all" class="actions">
            <input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="scope" value="all">
            {{#filter}}<input type="hidden" name="reason" value="{{reason}}"><input type="hidden" name="run" value="{{run}}"><input type="hidden" name="tries" value="{{tries}}">{{/filter}}
            With {{scope}}: <button type="submit" name="action" value="retry" id="retry-all-waiting">Retry now…</button>
            <button type="submit" name="action" value="delete" id="delete-all-waiting">Delete…</button>
            <button type="submit" name="action" value="bury" id="bury-all-waiting" class="danger">Send to the dead letters…</button>
          </form>
          {{/anyWaiting}}
          {{^empty(delayed)}}
          <form method="post" action="/console/workers/waiting" id="waiting-actions" class="actions">
            <input type="hidden" name="csrf" value="{{chrome.csrf}}">
            With the ticked jobs: <button type="submit" name="action" value="retry" id="retry-waiting">Retry now</button>
            <button type="submit" name="action" value="delete" id="delete-waiting">Delete</button>
            <button type="submit" name="action" value="bury" id="bury-waiting" class="danger">Send to the dead letters</button>
          </form>
          <ul id="delayed" class="letters">
            {{#delayed}}<li>{{#isJob}}<input type="checkbox" name="job" value="{{text}}" form="waiting-actions" aria-label="this job">{{/isJob}}<span class="subject">{{#subscriptionID}}<a href="/console/subscriptions/{{subscriptionID}}">{{subscriptionID}}</a>{{/subscriptionID}}{{^subscriptionID}}{{text}}{{/subscriptionID}}</span>
              <span class="kind">{{reason}}</span><span class="message">{{tries}}</span><span class="when-due">{{due}}</span></li>{{/delayed}}
          </ul>
          {{/empty(delayed)}}
          <p class="pages">{{#previousPage}}<a href="{{previousPage}}" id="previous-page">← sooner</a>{{/previousPage}}
            {{#nextPage}}<a href="{{nextPage}}" id="next-page">later →</a>{{/nextPage}}</p>
        </section>
        {{/main}}{{/layout}}
        """

    static let audit = """
        {{<layout}}{{$main}}
        <h1>Audit trail</h1>
        <form method="get" action="/console/audit" class="filters">
          <label>Action <input name="action" value="{{action}}" placeholder="fleet, dead.purge, webhooks…"></label>
          <button type="submit">Filter</button>
        </form>
        <p id="audit-count">{{summary}}</p>
        {{^empty(entries)}}
        <div class="scroll">
        <table id="audit">
          <thead><tr><th>When</th><th>Who</th><th>Action</th><th>On</th><th>Details</th><th>Outcome</th></tr></thead>
          <tbody>
          {{#entries}}<tr data-id="{{id}}"><td>{{at}}</td><td>{{actor}} <span class="muted">({{via}})</span></td><td>{{action}}</td>
            <td>{{target}}</td><td class="message">{{details}}</td><td{{#failed}} class="problem"{{/failed}}>{{outcome}}</td></tr>{{/entries}}
          </tbody>
        </table>
        </div>
        {{/empty(entries)}}
        <p class="pages">{{#newestPage}}<a href="{{newestPage}}" id="newest-page">← the newest</a>{{/newestPage}}
          {{#olderPage}}<a href="{{olderPage}}" id="older-page">older →</a>{{/olderPage}}</p>
        {{/main}}{{/layout}}
        """

    static let filterFields = """
        <input type="hidden" name="error_class" value="{{errorClass}}"><input type="hidden" name="run" value="{{run}}"><input type="hidden" name="subscription" value="{{subscription}}"><input type="hidden" name="q" value="{{text}}">
        """

    static let confirmWaiting = """
        {{<layout}}{{$main}}
        <h1>Act on waiting jobs?</h1>
        <p id="waiting-question">{{question}}</p>
        <form method="post" action="/console/workers/waiting">
          <input type="hidden" name="csrf" value="{{chrome.csrf}}">
          <input type="hidden" name="confirm" value="yes">
          <input type="hidden" name="action" value="{{action}}">
          {{#jobs}}<input type="hidden" name="job" value="{{.}}">{{/jobs}}
          {{#matching}}<input type="hidden" name="scope" value="all"><input type="hidden" name="count" value="{{count}}">
          <input type="hidden" name="reason" value="{{reason}}"><input type="hidden" name="run" value="{{run}}"><input type="hidden" name="tries" value="{{tries}}">{{/matching}}
          {{#button}}<button type="submit" id="confirm-waiting">{{button}}</button>{{/button}}
          <a href="/console/workers">Cancel</a>
        </form>
        {{/main}}{{/layout}}
        """

    static let confirmReplay = """
        {{<layout}}{{$main}}
        <h1>{{chrome.title}}</h1>
        <p id="replay-question">{{question}}</p>
        <form method="post" action="{{action}}">
          <input type="hidden" name="csrf" value="{{chrome.csrf}}">
          <input type="hidden" name="confirm" value="yes">
          {{#filter}}{{> filter-fields}}{{/filter}}
          {{#ids}}<input type="hidden" name="id" value="{{.}}">{{/ids}}
          <button type="submit" id="confirm-replay">{{button}}</button>
          <a href="/console/dead">Cancel</a>
        </form>
        {{/main}}{{/layout}}
        """

    static let subscriptions = """
        {{<layout}}{{$main}}
        <h1>Subscriptions</h1>
        <form method="get" action="/console/subscriptions" class="filters">
          <label for="q">Id, original_transaction_id, account id or order id</label>
          <input id="q" name="q" value="{{query}}" required>
          <button type="submit" id="look-up">Look up</button>
        </form>
        {{#subscription}}
        <h2 id="subscription-title">Subscription {{id}}</h2>
        <dl class="facts" id="subscription">
          <div><dt>original_transaction_id</dt><dd>{{originalTransactionID}}</dd></div>
          <div><dt>App</dt><dd>{{app}}</dd></div>
          <div><dt>Environment</dt><dd>{{environment}}</dd></div>
          <div><dt>Backend</dt><dd>{{backend}}</dd></div>
          <div><dt>Account</dt><dd>{{account}}</dd></div>
          <div><dt>State</dt><dd id="subscription-status">{{status}}</dd></div>
          <div><dt>Entitlement</dt><dd id="subscription-entitlement">{{entitlement}}</dd></div>
          <div><dt>Product</dt><dd>{{product}}</dd></div>
          <div><dt>Auto-renew</dt><dd>{{autoRenew}}</dd></div>
          <div><dt>Last verified</dt><dd>{{lastVerified}}</dd></div>
          <div><dt>Next check</dt><dd>{{nextCheck}}</dd></div>
        </dl>
        <form method="post" action="/console/subscriptions/{{id}}/verify">
          <input type="hidden" name="csrf" value="{{chrome.csrf}}">
          <button type="submit" id="verify-now">Verify now</button>
        </form>
        <form method="post" action="/console/subscriptions/{{id}}/extend" class="filters" id="extend">
          <input type="hidden" name="csrf" value="{{chrome.csrf}}">
          <label for="days">Extend the renewal date by</label>
          <input id="days" name="days" type="number" min="1" max="90" value="7" required> days,
          <label for="reason">because</label>
          <select id="reason" name="reason">
            <option value="service-issue">service issue</option><option value="customer-satisfaction">customer satisfaction</option>
            <option value="other">other</option><option value="undeclared">undeclared</option>
          </select>
          <button type="submit" id="extend-renewal">Extend…</button>
        </form>
        <h3>Events</h3>
        <ol class="timeline" id="events">
          {{#events}}<li><strong>{{type}}</strong> <time>{{occurredAt}}</time> <span class="muted">{{delivery}}</span></li>{{/events}}
          {{^events}}<li>No events yet.</li>{{/events}}
        </ol>
        <h3>Recent verifications</h3>
        <div class="scroll">
        <table id="verifications">
          <thead><tr><th>When</th><th>Outcome</th><th>Backend</th><th>Apple</th><th>Error</th></tr></thead>
          <tbody>{{#verifications}}<tr><td>{{at}}</td><td>{{outcome}}</td><td>{{backend}}</td><td>{{apple}}</td><td class="message">{{error}}</td></tr>{{/verifications}}</tbody>
        </table>
        </div>
        <h3>In the queue</h3>
        <p id="queue-summary">{{queueSummary}}</p>
        {{^empty(queueJobs)}}
        <ul id="queue-jobs" class="letters">
          {{#queueJobs}}<li data-where="{{place}}"><span class="kind">{{place}}</span><span class="muted">{{reason}}</span><span class="message">{{detail}}</span>
            {{#deadLink}}<a href="{{deadLink}}">dead letters</a>{{/deadLink}}
            {{#waitingJob}}<form method="post" action="/console/workers/waiting" class="job-actions">
              <input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="job" value="{{waitingJob}}">
              <button type="submit" name="action" value="retry">Retry now</button> <button type="submit" name="action" value="delete">Delete</button>
              <button type="submit" name="action" value="bury" class="danger">Send to the dead letters</button></form>{{/waitingJob}}</li>{{/queueJobs}}
        </ul>
        {{/empty(queueJobs)}}
        {{^empty(refundRequests)}}
        <h3>Refund requests</h3>
        <div class="scroll">
        <table id="refund-requests">
          <thead><tr><th>Transaction</th><th>Reason</th><th>Asked</th><th>Deadline</th><th>State</th><th>Answer</th></tr></thead>
          <tbody>{{#refundRequests}}<tr data-state="{{state}}"><td>{{transactionID}}</td><td>{{reason}}</td><td>{{asked}}</td><td>{{deadline}}</td><td>{{state}}</td><td class="message">{{detail}}</td></tr>{{/refundRequests}}</tbody>
        </table>
        </div>
        {{/empty(refundRequests)}}
        {{/subscription}}
        {{#choices}}
        <p>Several subscriptions match:</p>
        <ul id="choices">{{#items}}<li><a href="/console/subscriptions/{{id}}">{{id}}</a> ({{app}}, {{environment}}, account {{account}})</li>{{/items}}</ul>
        {{/choices}}
        {{/main}}{{/layout}}
        """

    static let webhooks = """
        {{<layout}}{{$main}}
        <h1>Webhooks</h1>
        <p class="hint">Deliveries of the last 24 hours. Add, disable or remove endpoints with <code>receiptfleet webhooks</code>.</p>
        {{^endpoints}}<p id="no-webhooks">No webhook endpoints.</p>{{/endpoints}}
        {{#endpoints}}
        <section class="endpoint" id="webhook-{{id}}">
          <h2>{{url}}</h2>
          <p class="gate {{stateClass}}">{{state}} · {{types}}</p>
          <dl class="figures">
            <div><dt>Delivered</dt><dd>{{delivered}}</dd></div>
            <div><dt>Failed</dt><dd>{{failed}}</dd></div>
            <div><dt>Pending</dt><dd>{{pending}}</dd></div>
            <div><dt>Last delivered</dt><dd>{{lastDelivered}}</dd></div>
          </dl>
          {{^empty(failures)}}
          <div class="scroll">
          <table><caption>Latest failed attempts</caption>
            <thead><tr><th>When</th><th>Status</th><th>Error</th></tr></thead>
            <tbody>{{#failures}}<tr><td>{{at}}</td><td>{{status}}</td><td class="message">{{error}}</td></tr>{{/failures}}</tbody>
          </table>
          </div>
          {{/empty(failures)}}
        </section>
        {{/endpoints}}
        {{/main}}{{/layout}}
        """
}

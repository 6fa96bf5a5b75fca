/* The usage page's charts: the totals tables drawn with Chartist (static/vendor), from the
 * numbers the page carries (#usage-chart-data, the same as the tables and the API). */
(function () {
  "use strict";

  var SERIES = {
    tokens: { names: ["Tokens in", "Tokens out"], keys: ["tokens_in", "tokens_out"], stack: true },
    calls: { names: ["LLM calls", "Tool calls"], keys: ["llm_calls", "tool_calls"], stack: false },
    time: { names: ["Job time (minutes)"], keys: ["minutes"], stack: false },
  };

  function draw(metric) {
    var source = document.getElementById("usage-chart-data");
    if (!source || !window.Chartist) return;
    var data = JSON.parse(source.textContent);
    var shape = SERIES[metric] || SERIES.tokens;
    document.querySelectorAll(".usage-chart[data-chart]").forEach(function (el) {
      var chart = data[el.getAttribute("data-chart")];
      if (!chart || !chart.labels.length) return;
      var series = shape.keys.map(function (key, i) {
        return { name: shape.names[i], data: chart[key] };
      });
      new window.Chartist.BarChart(
        el,
        { labels: chart.labels, series: series },
        { stackBars: shape.stack, height: "220px", axisY: { onlyInteger: metric !== "time" } }
      );
      el.setAttribute("data-metric", metric);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var select = document.getElementById("usage-metric");
    draw(select ? select.value : "tokens");
    if (select) select.addEventListener("change", function () { draw(select.value); });
  });
})();

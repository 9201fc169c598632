// Sorting and filtering of the reproduction page's table (book/reproduction.md); plain DOM, no
// library, offline. Without scripts the table is shown as rendered.
(function () {
  function ready(fn) {
    if (document.readyState !== "loading") { fn(); } else { document.addEventListener("DOMContentLoaded", fn); }
  }
  // a value cell carries its number in data-value (its text also names the metric)
  function cellKey(cell) {
    var v = cell.getAttribute("data-value");
    return (v === null ? cell.textContent : v).trim();
  }
  ready(function () {
    var table = document.getElementById("reproduction");
    if (!table) { return; }
    var controls = document.getElementById("repro-controls");
    var filter = document.getElementById("repro-filter");
    var select = document.getElementById("repro-verdict");
    var shown = document.getElementById("repro-shown");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    controls.hidden = false;
    function apply() {
      var q = (filter.value || "").toLowerCase();
      var v = select.value;
      var n = 0;
      rows.forEach(function (r) {
        var ok = (!q || r.textContent.toLowerCase().indexOf(q) >= 0) && (!v || r.getAttribute("data-verdict") === v);
        r.style.display = ok ? "" : "none";
        if (ok) { n += 1; }
      });
      shown.textContent = n + " of " + rows.length + " rows shown";
    }
    filter.addEventListener("input", apply);
    select.addEventListener("change", apply);
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.style.cursor = "pointer";
      th.title = "sort by this column";
      th.addEventListener("click", function () {
        var asc = th.getAttribute("data-order") !== "asc";
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("data-order"); });
        th.setAttribute("data-order", asc ? "asc" : "desc");
        var num = th.getAttribute("data-sort") === "num";
        rows.sort(function (a, b) {
          var x = cellKey(a.cells[col]), y = cellKey(b.cells[col]);
          var c;
          if (num) {
            var fx = parseFloat(x), fy = parseFloat(y);
            c = (isNaN(fx) ? Infinity : fx) - (isNaN(fy) ? Infinity : fy);
            if (isNaN(c)) { c = 0; }
          } else { c = x.localeCompare(y); }
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
    apply();
  });
})();

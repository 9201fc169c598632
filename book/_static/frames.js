// The book's interactive sections without a kernel (icml25.common.static_or_interactive under
// ICML25_PRERENDER=1): each .icml25-frames panel holds the figures drawn for a grid of control
// values; moving a control swaps the image of the figure just above the panel. Plain JavaScript,
// nothing fetched.
(function () {
  function init(panel) {
    var data;
    try { data = JSON.parse(panel.getAttribute("data-frames")); } catch (e) { return; }
    var cell = panel.closest(".cell") || panel.parentElement;
    var imgs = Array.prototype.filter.call(cell.querySelectorAll("img"), function (im) { return !panel.contains(im); });
    var img = imgs.length ? imgs[imgs.length - 1] : null;
    if (!img) {  // no figure above (e.g. outputs laid out differently): show one inside the panel
      img = document.createElement("img");
      panel.insertBefore(img, panel.firstChild);
    }
    var inputs = panel.querySelectorAll("input[type=range][data-name]");
    function key() {
      return data.names.map(function (n) {
        var el = panel.querySelector("input[data-name='" + n + "']");
        return el ? el.value : "0";
      }).join(",");
    }
    function update() {
      inputs.forEach(function (el) {
        var labels = JSON.parse(el.getAttribute("data-labels"));
        var out = el.parentElement.parentElement.querySelector("output");
        if (out) { out.textContent = labels[+el.value]; }
      });
      var src = data.frames[key()];
      if (!src) { return; }
      // the frames may be stored at another resolution than the page's figure: keep its size
      var w = img.getBoundingClientRect().width;
      if (w > 0 && !img.style.width) { img.style.width = w + "px"; img.style.height = "auto"; }
      img.src = src;
      img.setAttribute("data-frame", key());
    }
    inputs.forEach(function (el) { el.addEventListener("input", update); });
    panel.classList.add("icml25-frames-ready");
  }
  function all() { document.querySelectorAll(".icml25-frames").forEach(init); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", all); } else { all(); }
})();

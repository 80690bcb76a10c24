// The long crawl's web (testweb/njsweb.py): every page computed from its URL, no file per page.
// testweb/njsweb.py holds the same generator in Python (its links, statuses and redirect targets) and the
// nginx configuration that loads this module; keep the two in step (tests/test_njs_web.py compares them).
//
import FILLER from "njsweb_text.js";

// The web's parameters come from nginx variables set in that configuration ($web_servers, $web_pages,
// $web_links, $web_onsite, $web_seed): one module serves every shape. Nothing heavy at the top level:
// njs runs it again for every request.

var BRANCH = 8;
var GONE_EVERY = 33, GONE_AT = 5;      // page k links /gone/<k> (404) when k % 33 == 5
var MOVED_EVERY = 50, MOVED_AT = 7;    // page k links /moved/<k> (301 to another page) when k % 50 == 7
var PRIVATE_EVERY = 50, PRIVATE = 5;   // page k links /private/<(k / 50) % 5> when k % 50 == 0
var LANGS = ["en", "de", "fr", "es"];
var WORDS = {
    en: ["crawler", "server", "page", "link", "robots", "index", "frontier", "queue", "worker", "status", "check", "latency", "archive", "network", "protocol", "request", "response", "header", "body", "title", "language", "domain", "host", "address", "schedule", "rank", "graph", "sample", "profile", "agent", "parse", "token", "anchor", "document", "content", "report", "survey"],
    de: ["seite", "verweis", "dienst", "anfrage", "antwort", "kopf", "inhalt", "sprache", "bereich", "rechner", "adresse", "zeitplan", "rang", "graph", "probe", "profil", "agent", "zeichen", "anker", "dokument", "bericht", "umfrage", "suche", "liste", "warteschlange", "arbeiter", "zustand", "pruefung", "verzoegerung", "archiv", "netz", "protokoll", "titel"],
    fr: ["page", "lien", "serveur", "robot", "index", "file", "travailleur", "statut", "controle", "latence", "archive", "reseau", "protocole", "requete", "reponse", "entete", "corps", "titre", "langue", "domaine", "hote", "adresse", "calendrier", "rang", "graphe", "profil", "agent", "jeton", "ancre", "document", "contenu", "rapport", "enquete"],
    es: ["pagina", "enlace", "servidor", "robot", "indice", "cola", "trabajador", "estado", "control", "latencia", "archivo", "red", "protocolo", "peticion", "respuesta", "cabecera", "cuerpo", "titulo", "idioma", "dominio", "anfitrion", "direccion", "horario", "rango", "grafo", "muestra", "perfil", "agente", "ficha", "ancla", "documento", "contenido", "informe"],
};
var FILLER_BYTES = 8192;  // each string of njsweb_text.js

function fmix(h) {
    h = (h ^ (h >>> 16)) >>> 0;
    h = Math.imul(h, 0x85ebca6b) >>> 0;
    h = (h ^ (h >>> 13)) >>> 0;
    h = Math.imul(h, 0xc2b2ae35) >>> 0;
    return (h ^ (h >>> 16)) >>> 0;
}

// A 32-bit hash of two 32-bit numbers: the generator's only source of randomness.
function mix(a, b) {
    return fmix(((Math.imul(a, 0x9e3779b1) >>> 0) + b) >>> 0);
}

function web(r) {
    var v = r.variables;
    return {
        servers: +v.web_servers, pages: +v.web_pages, links: +v.web_links, onsite: +v.web_onsite,
        seed: +v.web_seed, port: v.server_port, net: v.web_net,
    };
}

function path(k) {
    return k === 0 ? "/" : "/p/" + k;
}

function pageKey(w, s, k) {
    return mix(mix(w.seed, s), k);
}

// The page's links as [server, path], distinct, never to itself: tree children, random on-site, random
// off-site, then the extras (a 404, a redirect, a robots-disallowed page) on a share of pages.
function targets(w, s, k) {
    var key = pageKey(w, s, k), out = [], seen = {}, i = 0, c;
    seen[k] = 1;
    for (c = k * BRANCH + 1; c <= k * BRANCH + BRANCH && c < w.pages; c++) {
        seen[c] = 1;
        out.push([s, path(c)]);
    }
    var onsite = w.servers > 1 ? w.onsite : w.links;
    while (out.length < onsite) {
        c = mix(key, ++i) % w.pages;
        if (!seen[c]) {
            seen[c] = 1;
            out.push([s, path(c)]);
        }
    }
    var off = {};
    while (out.length < w.links) {
        var x = mix(key, ++i);
        var t = x % (w.servers - 1);
        if (t >= s) t++;
        c = mix(x, 7) % w.pages;
        if (!off[t * w.pages + c]) {
            off[t * w.pages + c] = 1;
            out.push([t, path(c)]);
        }
    }
    if (k % GONE_EVERY === GONE_AT) out.push([s, "/gone/" + k]);
    if (k % MOVED_EVERY === MOVED_AT) out.push([s, "/moved/" + k]);
    if (k % PRIVATE_EVERY === 0) out.push([s, "/private/" + ((k / PRIVATE_EVERY) % PRIVATE)]);
    return out;
}

function movedTo(w, s, k) {
    return mix(pageKey(w, s, k), 999) % w.pages;
}

function origin(w, t) {
    return "http://" + w.net + "." + (t + 1) + ":" + w.port;
}

function render(w, s, k) {
    var key = pageKey(w, s, k);
    var lang = LANGS[mix(key, 1000) % LANGS.length];
    var size = 4000 + mix(key, 1001) % 10000;
    var filler = FILLER[lang], words = WORDS[lang];
    var links = targets(w, s, k);
    var title = "Page " + k + " of site " + (s + 1) + ": " + words[mix(key, 1002) % words.length];
    var parts = [
        '<!DOCTYPE html>\n<html lang="', lang, '"><head><meta charset="utf-8"><title>', title,
        "</title></head>\n<body>\n<h1>", title, "</h1>\n<p>",
    ];
    var chunk = Math.floor(size / (links.length + 1));
    for (var i = 0; i < links.length; i++) {
        var at = mix(key, 2000 + i) % (FILLER_BYTES - chunk);
        var l = links[i];
        parts.push(filler.substring(at, at + chunk), ' <a href="', l[0] === s ? l[1] : origin(w, l[0]) + l[1],
            '">', words[mix(key, 3000 + i) % words.length], "</a>", i % 3 === 2 ? "</p>\n<p>" : " ");
    }
    parts.push("</p>\n</body></html>\n");
    return parts.join("");
}

// "/" and "/p/<k>" (k written as the web writes it) for 0 <= k < pages; -1 for anything else.
function pageOf(w, p, prefix) {
    if (p === "/" && prefix === "/p/") return 0;
    if (p.substring(0, prefix.length) !== prefix) return -1;
    var text = p.substring(prefix.length), k = +text;
    if (!(k >= 1 && k < w.pages) || String(k) !== text) return -1;
    return k;
}

function serve(r) {
    var w = web(r);
    var octets = r.variables.server_addr.split(".");
    var s = +octets[3] - 1;
    var p = r.uri;
    if (s < 0 || s >= w.servers) {
        r.return(404, "no such server\n");
        return;
    }
    var k = pageOf(w, p, "/p/");
    if (k >= 0) {
        r.headersOut["Content-Type"] = "text/html; charset=utf-8";
        r.return(200, render(w, s, k));
        return;
    }
    k = pageOf(w, p, "/moved/");
    if (k >= 0 && k % MOVED_EVERY === MOVED_AT) {
        r.return(301, origin(w, s) + path(movedTo(w, s, k)));
        return;
    }
    if (p.substring(0, 9) === "/private/") {
        r.headersOut["Content-Type"] = "text/html; charset=utf-8";
        r.return(200, "<html><title>private</title>secret</html>\n");
        return;
    }
    r.return(404, "not found\n");
}

export default { serve: serve };

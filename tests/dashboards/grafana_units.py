#!/usr/bin/env python3
"""Every unit in the dashboards is one of Grafana's built-in unit ids.

Grafana shows an unknown unit as a literal suffix on the raw number
("1097160889 bytes/sec"), so a typo is silent. This checks each panel's
`fieldConfig.defaults.unit`, every field override's `unit` property and a
heatmap's `options.yAxis.unit` against GRAFANA_UNITS: the ids of Grafana's
value formats (packages/grafana-data/src/valueFormats/categories.ts), by
category. Grafana's custom-unit prefixes (`suffix:`, `prefix:`, `si:`, ...)
are refused on purpose: the dashboards use built-in units only.

Usage: grafana_units.py [DASHBOARD.json ...]   (default: dashboards/grafana/*.json)
"""
import json
import pathlib
import sys

import dashboard_lib as lib

GRAFANA_UNITS = {
    "Misc": ["none", "string", "short", "sishort", "percent", "percentunit", "humidity", "dB", "candela", "hex0x",
             "hex", "sci", "locale", "pixel"],
    "Acceleration": ["accMS2", "accFS2", "accG"],
    "Angle": ["degree", "radian", "grad", "arcmin", "arcsec"],
    "Area": ["areaM2", "areaF2", "areaMI2", "acres", "hectares"],
    "Computation": ["flops", "mflops", "gflops", "tflops", "pflops", "eflops", "zflops", "yflops"],
    "Concentration": ["ppm", "conppb", "conngm3", "conngNm3", "conμgm3", "conμgNm3", "conmgm3", "conmgNm3", "congm3",
                      "congNm3", "conmgdL", "conmmolL"],
    "Currency": ["currencyUSD", "currencyGBP", "currencyEUR", "currencyJPY", "currencyRUB", "currencyUAH",
                 "currencyBRL", "currencyDKK", "currencyISK", "currencyNOK", "currencySEK", "currencyCZK",
                 "currencyCHF", "currencyPLN", "currencyBTC", "currencymBTC", "currencyμBTC", "currencyZAR",
                 "currencyINR", "currencyKRW", "currencyIDR", "currencyPHP", "currencyVND", "currencyTRY",
                 "currencyMYR", "currencyXPF", "currencyBGN", "currencyPYG", "currencyUYU", "currencyILS"],
    "Data": ["bytes", "decbytes", "bits", "decbits", "kbytes", "deckbytes", "mbytes", "decmbytes", "gbytes",
             "decgbytes", "tbytes", "dectbytes", "pbytes", "decpbytes"],
    "Data rate": ["pps", "binBps", "Bps", "binbps", "bps", "KiBs", "Kibits", "KBs", "Kbits", "MiBs", "Mibits", "MBs",
                  "Mbits", "GiBs", "Gibits", "GBs", "Gbits", "TiBs", "Tibits", "TBs", "Tbits", "PiBs", "Pibits", "PBs",
                  "Pbits"],
    "Date & time": ["dateTimeAsIso", "dateTimeAsIsoNoDateIfToday", "dateTimeAsUS", "dateTimeAsUSNoDateIfToday",
                    "dateTimeAsLocal", "dateTimeAsLocalNoDateIfToday", "dateTimeAsSystem", "dateTimeFromNow"],
    "Energy": ["watt", "kwatt", "megwatt", "gwatt", "mwatt", "Wm2", "voltamp", "kvoltamp", "voltampreact",
               "kvoltampreact", "watth", "watthperkg", "kwatth", "kwattm", "mwatth", "amph", "kamph", "mamph", "joule",
               "ev", "amp", "kamp", "mamp", "volt", "kvolt", "mvolt", "dBm", "mohm", "ohm", "kohm", "Mohm", "farad",
               "µfarad", "nfarad", "pfarad", "ffarad", "henry", "mhenry", "µhenry", "lumens"],
    "Flow": ["flowgpm", "flowcms", "flowcfs", "flowcfm", "litreh", "flowlpm", "flowmlpm", "lux"],
    "Force": ["forceNm", "forcekNm", "forceN", "forcekN"],
    "Hash rate": ["Hs", "KHs", "MHs", "GHs", "THs", "PHs", "EHs"],
    "Mass": ["massmg", "massg", "masslb", "masskg", "masst"],
    "Length": ["lengthmm", "lengthin", "lengthft", "lengthm", "lengthkm", "lengthmi"],
    "Pressure": ["pressurembar", "pressurebar", "pressurekbar", "pressurepa", "pressurehpa", "pressurekpa",
                 "pressurehg", "pressurepsi"],
    "Radiation": ["radbq", "radci", "radgy", "radrad", "radsv", "radmsv", "radusv", "radrem", "radexpckg", "radr",
                  "radsvh", "radmsvh", "radusvh"],
    "Rotational Speed": ["rotrpm", "rothz", "rotkhz", "rotmhz", "rotghz", "rotrads", "rotdegs"],
    "Temperature": ["celsius", "fahrenheit", "kelvin"],
    "Time": ["hertz", "ns", "µs", "ms", "s", "m", "h", "d", "dtdurationms", "dtdurations", "dthms", "dtdhms",
             "timeticks", "clockms", "clocks"],
    "Throughput": ["cps", "ops", "reqps", "rps", "wps", "iops", "eps", "mps", "recps", "rowsps", "cpm", "opm", "reqpm",
                   "rpm", "wpm", "epm", "mpm", "recpm", "rowspm"],
    "Velocity": ["velocityms", "velocitykmh", "velocitymph", "velocityknot"],
    "Volume": ["mlitre", "litre", "m3", "Nm3", "dm3", "gallons"],
    "Boolean": ["bool", "bool_yes_no", "bool_on_off"],
}
UNIT_IDS = frozenset(u for ids in GRAFANA_UNITS.values() for u in ids)


def panel_units(board):
    """(where, unit) of every unit a dashboard sets: defaults, overrides and heatmap axes."""
    out = []
    for panel in board.get("panels", []):
        if panel.get("type") == "row":
            continue
        where = f"panel {panel.get('title')!r}"
        field_config = panel.get("fieldConfig", {})
        if "unit" in field_config.get("defaults", {}):
            out.append((where, field_config["defaults"]["unit"]))
        for override in field_config.get("overrides", []):
            for prop in override.get("properties", []):
                if prop.get("id") == "unit":
                    out.append((f"{where} override {override.get('matcher', {}).get('options')!r}", prop.get("value")))
        y_axis = panel.get("options", {}).get("yAxis", {})
        if "unit" in y_axis:
            out.append((f"{where} yAxis", y_axis["unit"]))
    return out


def check(boards):
    """Error messages for every unit that is not a Grafana unit id; `boards` is [(name, parsed JSON)]."""
    errors = []
    for name, board in boards:
        for where, unit in panel_units(board):
            if unit not in UNIT_IDS:
                errors.append(f"{name}: {where}: unit {unit!r} is not a Grafana unit id")
    return errors


def self_test():
    """The check itself: it must refuse what Grafana would print as a raw suffix, wherever the unit sits."""
    bad = {"panels": [
        {"type": "timeseries", "title": "a", "fieldConfig": {"defaults": {"unit": "bytes/sec"}, "overrides": []}},
        {"type": "table", "title": "b", "fieldConfig": {"defaults": {"unit": "s"}, "overrides": [
            {"matcher": {"id": "byName", "options": "c"}, "properties": [{"id": "unit", "value": "MB/s"}]}]}},
        {"type": "heatmap", "title": "d", "fieldConfig": {"defaults": {"unit": "s"}}, "options": {"yAxis": {"unit": "sec"}}},
        {"type": "stat", "title": "e", "fieldConfig": {"defaults": {"unit": "suffix:B/s"}}},
    ]}
    good = {"panels": [{"type": "row", "title": "r"},
                       {"type": "timeseries", "title": "a", "fieldConfig": {"defaults": {"unit": "binBps"}, "overrides": [
                           {"matcher": {"id": "byName", "options": "t"}, "properties": [
                               {"id": "unit", "value": "dateTimeFromNow"}]}]}, "options": {"yAxis": {"unit": "µs"}}}]}
    found = check([("bad", bad)])
    for expected in ("'bytes/sec'", "'MB/s'", "'sec'", "'suffix:B/s'"):
        if not any(expected in e for e in found):
            return [f"self-test: {expected} was not reported ({found})"]
    if len(found) != 4 or check([("good", good)]):
        return [f"self-test: unexpected result {found} / {check([('good', good)])}"]
    return []


def main(argv):
    if argv:
        boards = [(p, json.loads(pathlib.Path(p).read_text(encoding="utf-8"))) for p in argv]
    else:
        boards = [(path.name, board) for path, board in lib.dashboards()]
    errors = self_test() + check(boards)
    for e in errors:
        print("FAIL: " + e, file=sys.stderr)
    if not errors:
        count = sum(len(panel_units(b)) for _, b in boards)
        print(f"ok: {count} units in {len(boards)} dashboards are Grafana unit ids")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

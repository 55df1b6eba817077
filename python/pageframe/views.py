"""Kernel-format views as structured data.

The engine renders each view exactly as the kernel prints it; these parsers
read that text back the way tools read ``/proc`` (they work on a real
kernel's files too): ``parse("buddyinfo", open("/proc/buddyinfo").read())``.
"""

import pandas


def buddyinfo(text):
    """One row per (node, zone, order): free blocks of that order."""
    rows = []
    for line in text.splitlines():
        head, _, counts = line.partition("zone")
        if not counts:
            continue
        node = int(head.replace("Node", "").strip(" ,"))
        fields = counts.split()
        zone = fields[0]
        for order, count in enumerate(fields[1:]):
            rows.append({"node": node, "zone": zone, "order": order, "free": int(count)})
    return pandas.DataFrame(rows, columns=["node", "zone", "order", "free"])


def pagetypeinfo(text):
    """``{"free": DataFrame(node, zone, type, order, free),
    "blocks": DataFrame(node, zone, type, blocks)}``."""
    free, blocks = [], []
    block_types = []
    for line in text.splitlines():
        if line.startswith("Number of blocks type"):
            block_types = line[len("Number of blocks type"):].split()
            continue
        if not line.startswith("Node"):
            continue
        if ", type" in line:
            location, _, rest = line.partition(", type")
            fields = rest.split()
            node, zone = _node_zone(location)
            for order, count in enumerate(fields[1:]):
                free.append(
                    {"node": node, "zone": zone, "type": fields[0], "order": order, "free": int(count)}
                )
        else:
            location, _, rest = line.partition("zone")
            fields = rest.split()
            node = int(location.replace("Node", "").strip(" ,"))
            for kind, count in zip(block_types, fields[1:]):
                blocks.append({"node": node, "zone": fields[0], "type": kind, "blocks": int(count)})
    return {
        "free": pandas.DataFrame(free, columns=["node", "zone", "type", "order", "free"]),
        "blocks": pandas.DataFrame(blocks, columns=["node", "zone", "type", "blocks"]),
    }


def zoneinfo(text):
    """A list of dicts, one per (node, zone): every ``name value`` counter,
    ``protection`` as a list, ``pagesets`` as a list of per-CPU dicts."""
    zones = []
    zone = None
    cpu = None
    for line in text.splitlines():
        stripped = line.strip()
        if line.startswith("Node"):
            node, name = _node_zone(line)
            zone = {"node": node, "zone": name, "pagesets": []}
            zones.append(zone)
            cpu = None
            continue
        if zone is None or not stripped or stripped == "pagesets":
            continue
        if stripped.startswith("cpu:"):
            cpu = {"cpu": int(stripped.split(":")[1])}
            zone["pagesets"].append(cpu)
            continue
        if stripped.startswith("protection:"):
            values = stripped.split(":", 1)[1].strip(" ()")
            zone["protection"] = [int(value) for value in values.split(",") if value.strip()]
            continue
        name, value = _name_value(stripped.replace("pages free", "free"))
        if name is None:
            continue
        if cpu is not None and line.startswith(" " * 8) and name in ("count", "high", "batch"):
            cpu[name] = value
        else:
            zone[name] = value
    return zones


def vmstat(text):
    """``{counter: value}``."""
    counters = {}
    for line in text.splitlines():
        name, value = _name_value(line)
        if name is not None:
            counters[name] = value
    return counters


def shuffle(text):
    """``True`` when page_alloc.shuffle is on."""
    return text.strip() == "Y"


def sysctl(text):
    """``{"vm.min_free_kbytes": 8192, "vm.lowmem_reserve_ratio": [256, 256, 32, 0], ...}``:
    one value, or a list for a sysctl of several."""
    values = {}
    for line in text.splitlines():
        name, sep, value = line.partition(" = ")
        if not sep:
            continue
        numbers = [int(word) for word in value.split()]
        values[name.strip()] = numbers[0] if len(numbers) == 1 else numbers
    return values


#: The parser of each view.
PARSERS = {
    "buddyinfo": buddyinfo,
    "pagetypeinfo": pagetypeinfo,
    "zoneinfo": zoneinfo,
    "vmstat": vmstat,
    "shuffle": shuffle,
    "sysctl": sysctl,
}


def parse(name, text):
    """The view ``name``'s text as structured data."""
    try:
        parser = PARSERS[name]
    except KeyError:
        raise ValueError(f"no parser for view '{name}' (known: {', '.join(PARSERS)})") from None
    return parser(text)


def _node_zone(text):
    """(node, zone) from ``Node    0, zone   Normal``."""
    node_part, _, zone_part = text.partition(",")
    node = int(node_part.replace("Node", "").strip())
    return node, zone_part.replace("zone", "").strip()


def _name_value(text):
    """(name, int) from ``name: value`` or ``name value``; (None, None) if not one."""
    fields = text.replace(":", " ").split()
    if len(fields) != 2:
        return None, None
    try:
        return fields[0], int(fields[1])
    except ValueError:
        return None, None

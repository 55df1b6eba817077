//! GFP flags as tracepoints print them (`show_gfp_flags()`,
//! include/trace/events/mmflags.h): composite names first, then single
//! bits, joined by `|`; `none` for 0; unknown bits as hex. Parsing maps the
//! names back to the kernel's bit values.

/// Bit number of each single flag the kernel prints (include/linux/gfp_types.h).
const SINGLE_BITS: [(&str, u32); 25] = [
    ("__GFP_DMA", 0),
    ("__GFP_HIGHMEM", 1),
    ("__GFP_DMA32", 2),
    ("__GFP_MOVABLE", 3),
    ("__GFP_RECLAIMABLE", 4),
    ("__GFP_HIGH", 5),
    ("__GFP_IO", 6),
    ("__GFP_FS", 7),
    ("__GFP_ZERO", 8),
    ("__GFP_DIRECT_RECLAIM", 10),
    ("__GFP_KSWAPD_RECLAIM", 11),
    ("__GFP_WRITE", 12),
    ("__GFP_NOWARN", 13),
    ("__GFP_RETRY_MAYFAIL", 14),
    ("__GFP_NOFAIL", 15),
    ("__GFP_NORETRY", 16),
    ("__GFP_MEMALLOC", 17),
    ("__GFP_COMP", 18),
    ("__GFP_NOMEMALLOC", 19),
    ("__GFP_HARDWALL", 20),
    ("__GFP_THISNODE", 21),
    ("__GFP_ACCOUNT", 22),
    ("__GFP_ZEROTAGS", 23),
    ("__GFP_NO_OBJ_EXT", 24),
    ("__GFP_SKIP_KASAN", 25),
];

fn bit(name: &str) -> u32 {
    SINGLE_BITS
        .iter()
        .find(|(single, _)| *single == name)
        .map_or(0, |(_, bit)| 1 << bit)
}

/// The kernel's value of a flag name, single or composite.
pub fn flag_value(name: &str) -> Option<u32> {
    let reclaim = bit("__GFP_DIRECT_RECLAIM") | bit("__GFP_KSWAPD_RECLAIM");
    let kernel = reclaim | bit("__GFP_IO") | bit("__GFP_FS");
    let user = kernel | bit("__GFP_HARDWALL");
    let highuser = user | bit("__GFP_HIGHMEM");
    let highuser_movable = highuser | bit("__GFP_MOVABLE");
    let transhuge_light =
        (highuser_movable | bit("__GFP_COMP") | bit("__GFP_NOMEMALLOC") | bit("__GFP_NOWARN"))
            & !reclaim;
    Some(match name {
        "GFP_TRANSHUGE" => transhuge_light | bit("__GFP_DIRECT_RECLAIM"),
        "GFP_TRANSHUGE_LIGHT" => transhuge_light,
        "GFP_HIGHUSER_MOVABLE" => highuser_movable,
        "GFP_HIGHUSER" => highuser,
        "GFP_USER" => user,
        "GFP_KERNEL_ACCOUNT" => kernel | bit("__GFP_ACCOUNT"),
        "GFP_KERNEL" => kernel,
        "GFP_NOFS" => reclaim | bit("__GFP_IO"),
        "GFP_ATOMIC" => bit("__GFP_HIGH") | bit("__GFP_KSWAPD_RECLAIM"),
        "GFP_NOIO" => reclaim,
        "GFP_NOWAIT" => bit("__GFP_KSWAPD_RECLAIM") | bit("__GFP_NOWARN"),
        "GFP_DMA" => bit("__GFP_DMA"),
        "GFP_DMA32" => bit("__GFP_DMA32"),
        "__GFP_RECLAIM" => reclaim,
        "none" => 0,
        _ => {
            if let Some(hex) = name.strip_prefix("0x") {
                return u32::from_str_radix(hex, 16).ok();
            }
            let (_, bit) = SINGLE_BITS.iter().find(|(single, _)| *single == name)?;
            1 << bit
        }
    })
}

/// Parses `GFP_KERNEL|__GFP_COMP|__GFP_ZERO` (or a number) into kernel bits.
pub fn parse_gfp(text: &str) -> Option<u32> {
    if let Ok(value) = text.parse::<u32>() {
        return Some(value);
    }
    text.split('|')
        .try_fold(0u32, |bits, name| Some(bits | flag_value(name.trim())?))
}

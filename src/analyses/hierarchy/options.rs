//! `hierarchy`'s options: the chains (`a>b>c`, elements matched by name or
//! `re:` regex), the categories taking part, and how they compile
//! ([`ChainsSpec`] as users write it, [`HierarchyOptions`] compiled).

use super::*;

/// The chain checked when none is given.
pub const DEFAULT_CHAIN: &str = "sample_tokens>propose_draft_token_ids>proposer.propose";
/// The chains whose functions figure 4 (and batch's Table 9) show by
/// default: the hierarchy default chain plus the model step.
pub const DEFAULT_PLOT_CHAINS: [&str; 2] = [DEFAULT_CHAIN, "execute_model"];
/// CPU-side categories taking part by default (`Operator` is 2021-era Kineto).
pub const DEFAULT_CATEGORIES: [&str; 4] =
    ["cpu_op", "user_annotation", "python_function", "Operator"];
/// How many enclosing/overlapping parent names an example lists at most.
pub const MAX_OVERLAP_NAMES: usize = 10;

/// One chain element: a name, a python_function function part, or `re:RE`.
#[derive(Debug, Clone)]
pub struct Element {
    pub text: String,
    regex: Option<Regex>,
}

impl Element {
    pub fn parse(text: &str) -> Result<Element, OptionsError> {
        let regex = match text.strip_prefix("re:") {
            Some(re) => Some(Regex::new(re).map_err(|e| OptionsError::Regex {
                element: text.to_string(),
                msg: e.to_string(),
            })?),
            None => None,
        };
        Ok(Element {
            text: text.to_string(),
            regex,
        })
    }

    /// The name equals the element; or a python_function's part after the
    /// last `"): "` does; or the element's regex matches somewhere in the name.
    pub fn matches(&self, name: &str, python_function: bool) -> bool {
        if name == self.text {
            return true;
        }
        if python_function {
            if let Some(p) = name.rfind("): ") {
                if name[p + 3..] == self.text {
                    return true;
                }
            }
        }
        self.regex.as_ref().is_some_and(|r| r.is_match(name))
    }

    pub fn is_regex(&self) -> bool {
        self.regex.is_some()
    }
}

/// A bad `--chain` or category list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    #[error("invalid regex in chain element {element:?}: {msg}")]
    Regex { element: String, msg: String },
    #[error("empty element in chain {0:?} (elements are separated by '>')")]
    EmptyElement(String),
}

/// What to check, built once (see `cli::hierarchy::HierarchyArgs::to_options`).
#[derive(Debug, Clone)]
pub struct HierarchyOptions {
    /// Distinct elements over all chains.
    pub elements: Vec<Element>,
    /// Each chain as indices into `elements`.
    pub chains: Vec<Vec<usize>>,
    pub categories: Vec<String>,
    pub any_thread: bool,
    /// Uncontained children listed per link.
    pub examples: usize,
    /// How step contexts are chosen for calls per context.
    pub selector: Selector,
    /// Also join each function's calls to the GPU work they launched
    /// (needs the ledger; off: containment and durations only, several
    /// times faster).
    pub gpu_work: bool,
}

impl HierarchyOptions {
    /// `chains` as written (`"a>b>c"`, elements trimmed); empty → the
    /// default chain. Empty `categories` → the default categories.
    pub fn new(
        chains: &[String],
        categories: &[String],
        any_thread: bool,
        examples: usize,
        selector: Selector,
    ) -> Result<Self, OptionsError> {
        let default = [DEFAULT_CHAIN.to_string()];
        let chains_text = if chains.is_empty() {
            &default[..]
        } else {
            chains
        };
        let mut elements: Vec<Element> = Vec::new();
        let mut chains = Vec::new();
        for ch in chains_text {
            let mut idx = Vec::new();
            for part in ch.split('>').map(str::trim) {
                if part.is_empty() {
                    return Err(OptionsError::EmptyElement(ch.clone()));
                }
                let k = match elements.iter().position(|e| e.text == part) {
                    Some(k) => k,
                    None => {
                        elements.push(Element::parse(part)?);
                        elements.len() - 1
                    }
                };
                idx.push(k);
            }
            chains.push(idx);
        }
        let categories = if categories.is_empty() {
            DEFAULT_CATEGORIES.iter().map(|s| s.to_string()).collect()
        } else {
            categories.to_vec()
        };
        Ok(HierarchyOptions {
            elements,
            chains,
            categories,
            any_thread,
            examples,
            selector,
            gpu_work: true,
        })
    }
}

/// The options of the hierarchy analysis as users write them (flags,
/// Python keywords, records); [`ChainsSpec::options`] checks and compiles
/// them into [`HierarchyOptions`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct ChainsSpec {
    /// A chain "parent>child>grandchild" (`re:RE` elements match by
    /// regex); repeat for several
    /// [default: sample_tokens>propose_draft_token_ids>proposer.propose]
    #[cfg_attr(feature = "cli", arg(long = "chain", value_name = "A>B>C"))]
    pub chains: Vec<String>,
    /// Event category taking part; repeat for several (replaces the default
    /// list cpu_op, user_annotation, python_function, Operator).
    #[cfg_attr(feature = "cli", arg(long = "category", value_name = "CAT"))]
    pub categories: Vec<String>,
    /// Containment across threads: ignore pid/tid.
    #[cfg_attr(feature = "cli", arg(long))]
    pub any_thread: bool,
    /// Uncontained children listed per link.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N", default_value_t = DEFAULT_EXAMPLES))]
    pub examples: usize,
    /// Skip the GPU work per function (containment and durations only:
    /// reads only the chain's events, several times faster). In Python and
    /// records the field `gpu_work` (default true) says the opposite.
    #[cfg_attr(
        feature = "cli",
        arg(long = "no-gpu-work", action = clap::ArgAction::SetFalse)
    )]
    pub gpu_work: bool,
}

/// Uncontained children listed per link by default.
pub const DEFAULT_EXAMPLES: usize = 5;

impl Default for ChainsSpec {
    fn default() -> Self {
        ChainsSpec {
            chains: Vec::new(),
            categories: Vec::new(),
            any_thread: false,
            examples: DEFAULT_EXAMPLES,
            gpu_work: true,
        }
    }
}

impl ChainsSpec {
    /// Checks and compiles the options (contexts chosen by `selector`).
    pub fn options(&self, selector: &Selector) -> Result<HierarchyOptions, OptionsError> {
        let mut o = HierarchyOptions::new(
            &self.chains,
            &self.categories,
            self.any_thread,
            self.examples,
            selector.clone(),
        )?;
        o.gpu_work = self.gpu_work;
        Ok(o)
    }

    /// The options that compiled into `o` (`gpu_work` as given).
    pub fn of(o: &HierarchyOptions, gpu_work: bool) -> ChainsSpec {
        let chains = o
            .chains
            .iter()
            .map(|c| {
                let names: Vec<&str> = c.iter().map(|&k| o.elements[k].text.as_str()).collect();
                names.join(">")
            })
            .collect();
        ChainsSpec {
            chains,
            categories: o.categories.clone(),
            any_thread: o.any_thread,
            examples: o.examples,
            gpu_work,
        }
    }
}

//! The graph of uses between the modules of a crate, read from its source with `syn`, and
//! its cycles, between files and between floors (see the test file's own doc for the rules).

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::{Attribute, ImplItem, Item, UseTree};

// ---------------------------------------------------------------------------------------------
// The crate's modules: what each defines, imports and names.

/// One crate: its files, its modules (index 0 is the root) and every path its code writes.
pub(crate) struct Crate {
    /// Each file's module name (`peer::calls`; `lib` for the root).
    pub(crate) files: Vec<String>,
    modules: Vec<Module>,
    /// Every path written in the code: the module it is written in and its segments.
    paths: Vec<(usize, Vec<String>)>,
}

/// One module: a file, or an inline `mod x { .. }` of a file.
#[derive(Default)]
struct Module {
    file: usize,
    parent: Option<usize>,
    children: BTreeMap<String, usize>,
    defined: BTreeSet<String>,
    /// Local name -> the path it stands for, as written in this module.
    imported: BTreeMap<String, Vec<String>>,
    /// The paths of `use ..::*`, as written in this module.
    globs: Vec<Vec<String>>,
}

/// Reads a source file by its path; `None` when there is none.
pub(crate) type Read<'a> = &'a dyn Fn(&Path) -> Option<String>;

impl Crate {
    /// The crate whose root is `lib.rs` in `dir`, with every module its `mod` lines declare.
    pub(crate) fn load(dir: &Path, read: Read) -> Crate {
        let mut krate = Crate { files: Vec::new(), modules: Vec::new(), paths: Vec::new() };
        krate.add_file(&dir.join("lib.rs"), dir, Vec::new(), None, read);
        krate
    }

    /// Adds the module of `file`, whose submodules' files are in `children_dir`.
    fn add_file(
        &mut self,
        file: &Path,
        children_dir: &Path,
        name: Vec<String>,
        parent: Option<usize>,
        read: Read,
    ) -> usize {
        let text = read(file).unwrap_or_else(|| panic!("{} is not there", file.display()));
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        self.files.push(if name.is_empty() { "lib".to_owned() } else { name.join("::") });
        let module = self.modules.len();
        self.modules.push(Module { file: self.files.len() - 1, parent, ..Module::default() });
        self.add_items(module, &parsed.items, children_dir, &name, read);
        module
    }

    /// Adds what `items` of `module` define, import and name, and the submodules they declare
    /// (whose files are in `dir`).
    fn add_items(
        &mut self,
        module: usize,
        items: &[Item],
        dir: &Path,
        name: &[String],
        read: Read,
    ) {
        for item in items.iter().filter(|item| !is_test_only(item_attrs(item))) {
            match item {
                Item::Mod(declared) if declared.ident == "tests" => {}
                Item::Mod(declared) => {
                    let child = self.add_submodule(module, declared, dir, name, read);
                    self.modules[module].children.insert(declared.ident.to_string(), child);
                }
                _ => {
                    if let Some(defined) = item_name(item) {
                        self.modules[module].defined.insert(defined);
                    }
                    let mut found = Found::default();
                    found.visit_item(item);
                    self.take(module, found);
                }
            }
        }
    }

    /// Adds the submodule that `declared` declares: inline, a module of the same file; else the
    /// file `dir/x.rs` or `dir/x/mod.rs`.
    fn add_submodule(
        &mut self,
        module: usize,
        declared: &syn::ItemMod,
        dir: &Path,
        name: &[String],
        read: Read,
    ) -> usize {
        let ident = declared.ident.to_string();
        let (child_name, child_dir) =
            ([name, std::slice::from_ref(&ident)].concat(), dir.join(&ident));
        let Some((_, inline)) = &declared.content else {
            let file = child_file(dir, &ident, read);
            return self.add_file(&file, &child_dir, child_name, Some(module), read);
        };
        let child = self.modules.len();
        let file = self.modules[module].file;
        self.modules.push(Module { file, parent: Some(module), ..Module::default() });
        self.add_items(child, inline, &child_dir, &child_name, read);
        child
    }

    /// Records what a walk over one item of `module` found.
    fn take(&mut self, module: usize, found: Found) {
        let target = &mut self.modules[module];
        target.imported.extend(found.imported);
        target.globs.extend(found.globs);
        self.paths.extend(found.paths.into_iter().map(|path| (module, path)));
    }
}

/// The file of submodule `name` declared by a module whose submodules live in `dir`.
fn child_file(dir: &Path, name: &str, read: Read) -> PathBuf {
    let flat = dir.join(format!("{name}.rs"));
    let folder = dir.join(name).join("mod.rs");
    if read(&flat).is_some() { flat } else { folder }
}

/// The name an item defines in its module's namespace, if it defines one.
fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Macro(i) => i.ident.as_ref()?,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn impl_item_attrs(item: &ImplItem) -> &[Attribute] {
    match item {
        ImplItem::Const(i) => &i.attrs,
        ImplItem::Fn(i) => &i.attrs,
        ImplItem::Type(i) => &i.attrs,
        ImplItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}

/// `#[cfg(test)]`.
fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr.meta.require_list().is_ok_and(|list| list.tokens.to_string() == "test")
    })
}

// ---------------------------------------------------------------------------------------------
// The paths one item writes.

/// What a walk over an item found: the paths it writes and the names its `use`s bring.
#[derive(Default)]
struct Found {
    paths: Vec<Vec<String>>,
    imported: Vec<(String, Vec<String>)>,
    globs: Vec<Vec<String>>,
}

impl Found {
    fn add_use(&mut self, prefix: &[String], tree: &UseTree) {
        let under = |ident: &syn::Ident| -> Vec<String> {
            if ident == "self" { prefix.to_vec() } else { [prefix, &[ident.to_string()]].concat() }
        };
        match tree {
            UseTree::Path(path) => self.add_use(&under(&path.ident), &path.tree),
            UseTree::Name(name) => {
                let path = under(&name.ident);
                self.imported.push((path.last().cloned().unwrap_or_default(), path.clone()));
                self.paths.push(path);
            }
            UseTree::Rename(rename) => {
                let path = under(&rename.ident);
                if rename.rename != "_" {
                    self.imported.push((rename.rename.to_string(), path.clone()));
                }
                self.paths.push(path);
            }
            UseTree::Glob(_) => self.globs.push(prefix.to_vec()),
            UseTree::Group(group) => group.items.iter().for_each(|tree| self.add_use(prefix, tree)),
        }
    }
}

impl<'ast> Visit<'ast> for Found {
    fn visit_item(&mut self, item: &'ast Item) {
        if !is_test_only(item_attrs(item)) {
            visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        if !is_test_only(impl_item_attrs(item)) {
            visit::visit_impl_item(self, item);
        }
    }

    /// A module inside a function body is not followed.
    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        // `use ::name` names another crate: no prefix that resolves.
        let prefix = if item.leading_colon.is_some() { vec!["::".to_owned()] } else { vec![] };
        self.add_use(&prefix, &item.tree);
    }

    /// Attributes (derives, docs, `cfg`) name no item of the crate.
    fn visit_attribute(&mut self, _: &'ast Attribute) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            self.paths.push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        paths_in_tokens(mac.tokens.clone(), &mut self.paths);
    }
}

/// Every `a::b::c` (and lone `a`) in a macro's tokens, except a field or method after `.`, a
/// path after a leading `::` and a macro variable `$x` (but `$crate::` is `crate::`).
fn paths_in_tokens(tokens: TokenStream, paths: &mut Vec<Vec<String>>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let punct = |at: usize, c: char| matches!(tokens.get(at), Some(TokenTree::Punct(p)) if p.as_char() == c);
    let colons = |at: usize| {
        matches!(tokens.get(at), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
            && punct(at + 1, ':')
    };
    let mut at = 0;
    while at < tokens.len() {
        match &tokens[at] {
            TokenTree::Group(group) => paths_in_tokens(group.stream(), paths),
            TokenTree::Ident(ident) => {
                let after = |c| at > 0 && punct(at - 1, c);
                let written = !after('.') && !after(':') && (!after('$') || ident == "crate");
                let mut path = vec![ident.to_string()];
                while colons(at + 1) {
                    let Some(TokenTree::Ident(next)) = tokens.get(at + 3) else { break };
                    path.push(next.to_string());
                    at += 3;
                }
                if written {
                    paths.push(path);
                }
            }
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
        at += 1;
    }
}

// ---------------------------------------------------------------------------------------------
// Resolution: from a path to the file that defines what it names.

/// Who uses whom: (file, file) -> the names the first takes from the second.
pub(crate) type Uses = BTreeMap<(usize, usize), BTreeSet<String>>;

/// The names being looked up (module, name), so that a loop of imports ends.
type Seen = Vec<(usize, String)>;

/// What a path names: a module, or an item of a module (by its name).
#[derive(Clone)]
enum Target {
    Module(usize),
    Item(usize, String),
}

impl Crate {
    /// What `path`, written in `module`, names; `None` for a path into another crate (or a
    /// local variable).
    fn resolve(&self, module: usize, path: &[String], seen: &mut Seen) -> Option<Target> {
        let (first, rest) = path.split_first()?;
        let mut at = self.step(module, first, seen, None)?;
        for segment in rest {
            // After an item (an enum's variant, an associated item) the item's file stays.
            let Target::Module(inside) = at else { break };
            let fallback = Target::Item(inside, segment.clone());
            at = self.step(inside, segment, seen, Some(fallback))?;
        }
        Some(at)
    }

    /// `name` looked up in `module` (`crate`, `super` and `self` relative to it); `or` when the
    /// module has no such name.
    fn step(
        &self,
        module: usize,
        name: &str,
        seen: &mut Seen,
        or: Option<Target>,
    ) -> Option<Target> {
        match name {
            "crate" => Some(Target::Module(0)),
            "super" => self.modules[module].parent.map(Target::Module),
            "self" => Some(Target::Module(module)),
            _ => self.lookup(module, name, seen).or(or),
        }
    }

    /// `name` in `module`'s namespace: a child module, an item it defines, a name it imports
    /// (followed to where that is defined) or one that a glob of it brings.
    fn lookup(&self, module: usize, name: &str, seen: &mut Seen) -> Option<Target> {
        let here = &self.modules[module];
        if let Some(&child) = here.children.get(name) {
            return Some(Target::Module(child));
        }
        if here.defined.contains(name) {
            return Some(Target::Item(module, name.to_owned()));
        }
        let key = (module, name.to_owned());
        if seen.contains(&key) {
            return None;
        }
        seen.push(key);
        let found = match here.imported.get(name) {
            Some(path) => self.resolve(module, path, seen),
            None => here.globs.iter().find_map(|glob| match self.resolve(module, glob, seen)? {
                Target::Module(from) => self.lookup(from, name, seen),
                Target::Item(..) => None,
            }),
        };
        seen.pop();
        found
    }

    /// Who uses whom: (file, file) -> the names the first takes from the second.
    pub(crate) fn uses(&self) -> Uses {
        let mut uses = Uses::new();
        for (module, path) in &self.paths {
            if let Some(Target::Item(defining, name)) = self.resolve(*module, path, &mut Vec::new())
            {
                let (user, used) = (self.modules[*module].file, self.modules[defining].file);
                if user != used {
                    uses.entry((user, used)).or_default().insert(name);
                }
            }
        }
        uses
    }
}

// ---------------------------------------------------------------------------------------------
// Cycles: strongly connected components, each told as its loops.

/// Tarjan's walk: each file's index in the walk, the lowest index it reaches, the stack.
struct Tarjan<'a> {
    next: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    counter: usize,
    found: &'a mut Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for w in self.next[v].clone() {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(index) if self.on_stack[w] => self.low[v] = self.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort_unstable();
                self.found.push(component);
            }
        }
    }
}

/// The strongly connected components of more than one file (Tarjan), each sorted.
fn cycles(files: usize, uses: &Uses) -> Vec<Vec<usize>> {
    let mut next = vec![Vec::new(); files];
    for &(user, used) in uses.keys() {
        next[user].push(used);
    }
    let mut found = Vec::new();
    let mut tarjan = Tarjan {
        next,
        index: vec![None; files],
        low: vec![0; files],
        stack: Vec::new(),
        on_stack: vec![false; files],
        counter: 0,
        found: &mut found,
    };
    for v in 0..files {
        if tarjan.index[v].is_none() {
            tarjan.visit(v);
        }
    }
    found.sort();
    found
}

/// The loops of one component: for each use `a -> b` inside it, the shortest way back from `b`
/// to `a`; each loop once, starting at its first file.
fn loops(component: &[usize], uses: &Uses) -> Vec<Vec<usize>> {
    let inside = |(a, b): &(usize, usize)| component.contains(a) && component.contains(b);
    let mut found = BTreeSet::new();
    for &(a, b) in uses.keys().filter(|edge| inside(edge)) {
        let mut back: BTreeMap<usize, usize> = BTreeMap::from([(b, b)]);
        let mut queue = VecDeque::from([b]);
        while let Some(v) = queue.pop_front() {
            if v == a {
                break;
            }
            for &(_, w) in uses.keys().filter(|edge| edge.0 == v && inside(edge)) {
                if let Entry::Vacant(entry) = back.entry(w) {
                    entry.insert(v);
                    queue.push_back(w);
                }
            }
        }
        let mut path = vec![a];
        while *path.last().unwrap() != b {
            path.push(back[path.last().unwrap()]);
        }
        path.push(a);
        path.reverse(); // a -> b -> .. -> a
        path.pop();
        let start = (0..path.len()).min_by_key(|&i| path[i]).unwrap();
        path.rotate_left(start);
        found.insert(path);
    }
    let mut found: Vec<_> = found.into_iter().collect();
    found.sort_by_key(|path| path.len());
    found
}

/// Every cycle of the crate in `dir`, told for someone who will break it; empty when none.
pub(crate) fn cycles_of(dir: &Path, read: Read) -> String {
    let krate = Crate::load(dir, read);
    tell(&krate.files, &krate.uses())
}

/// The top-level module (the floor) of a file: `peer` for `peer::calls`, `lib` for the root.
pub(crate) fn floor_of(file: &str) -> &str {
    file.split("::").next().unwrap_or(file)
}

/// Every circle of the floors of the crate in `dir` (its top-level modules, each with its
/// folder), told as [`cycles_of`] tells cycles of files, each use with the files that make
/// it; empty when none.
pub(crate) fn floor_cycles_of(dir: &Path, read: Read) -> String {
    let krate = Crate::load(dir, read);
    let mut floors: Vec<String> = krate.files.iter().map(|f| floor_of(f).to_owned()).collect();
    floors.sort();
    floors.dedup();
    let floor =
        |file: usize| floors.binary_search_by(|f| f.as_str().cmp(floor_of(&krate.files[file])));
    let mut uses = Uses::new();
    for ((a, b), tie) in krate.uses() {
        let (from, to) = (floor(a).unwrap(), floor(b).unwrap());
        if from != to {
            let (user, used) = (&krate.files[a], &krate.files[b]);
            let tie = tie.iter().map(|name| format!("{name} ({user} -> {used})"));
            uses.entry((from, to)).or_default().extend(tie);
        }
    }
    tell(&floors, &uses)
}

/// The cycles of the graph `uses` over the nodes `names`, each with its loops and the names
/// that tie each use; empty when none.
fn tell(names: &[String], uses: &Uses) -> String {
    let name = |node: usize| names[node].as_str();
    let mut told = String::new();
    for component in cycles(names.len(), uses) {
        let names: Vec<_> = component.iter().map(|&f| name(f)).collect();
        told += &format!("\n  {{{}}}\n", names.join(", "));
        for path in loops(&component, uses) {
            let walk: Vec<_> = path.iter().chain(&path[..1]).map(|&f| name(f)).collect();
            told += &format!("    {}\n", walk.join(" -> "));
        }
        told += "    where\n";
        for ((a, b), tie) in
            uses.iter().filter(|((a, b), _)| component.contains(a) && component.contains(b))
        {
            let tie: Vec<_> = tie.iter().map(String::as_str).collect();
            told += &format!("      {} -> {}: {}\n", name(*a), name(*b), tie.join(", "));
        }
    }
    told
}

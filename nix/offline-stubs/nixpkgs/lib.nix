# Stub of nixpkgs' lib: only what flysim's flake and the other stubs use.
let
  lib = rec {
    genAttrs = names: f: builtins.listToAttrs (map (name: { inherit name; value = f name; }) names);
    mapAttrs = builtins.mapAttrs;
    attrNames = builtins.attrNames;
    attrValues = builtins.attrValues;
    filterAttrs = pred: set: removeAttrs set (builtins.filter (n: !pred n set.${n}) (builtins.attrNames set));
    optional = cond: x: if cond then [ x ] else [ ];
    optionals = cond: xs: if cond then xs else [ ];
    optionalAttrs = cond: set: if cond then set else { };
    optionalString = cond: s: if cond then s else "";
    concatStringsSep = builtins.concatStringsSep;
    hasPrefix = pre: s: builtins.substring 0 (builtins.stringLength pre) s == pre;
    hasSuffix = suf: s:
      let
        ls = builtins.stringLength s;
        lx = builtins.stringLength suf;
      in
      ls >= lx && builtins.substring (ls - lx) lx s == suf;
    isDerivation = x: builtins.isAttrs x && (x.type or null) == "derivation";
    getExe = drv: "${drv}/bin/${drv.meta.mainProgram or drv.pname or drv.name}";
    fix = f: let x = f x; in x;
    extends = overlay: f: final: let prev = f final; in prev // overlay final prev;
    composeManyExtensions = builtins.foldl' (
      acc: overlay: final: prev:
      let
        a = acc final prev;
      in
      a // overlay final (prev // a)
    ) (final: prev: { });

    # Stub of lib.fileset with the semantics that matter here: a file set is a
    # set of *files* (absolute path strings); a path must exist to be coerced;
    # toSource keeps only those files and the directories leading to them
    # (so an empty directory does not appear), and rejects files outside root.
    fileset = rec {
      _walk = dir:
        let
          entries = builtins.readDir dir;
        in
        builtins.foldl' (
          acc: name:
          let
            p = "${toString dir}/${name}";
            type = entries.${name};
          in
          acc // (if type == "directory" then _walk (/. + p) else { ${p} = type; })
        ) { } (builtins.attrNames entries);

      _coerce = ctx: x:
        if builtins.isAttrs x && (x._type or null) == "fileset" then
          x
        else if builtins.isPath x then
          (
            if !builtins.pathExists x then
              throw "stub lib.fileset.${ctx}: ${toString x} is a path that does not exist"
            # (the parent of a flake's source is the store, which pure evaluation
            # may not list (with a chroot store it is <root>/nix/store); such a
            # source is always a directory)
            else if hasSuffix builtins.storeDir (toString (dirOf x)) || (builtins.readDir (dirOf x)).${baseNameOf x} == "directory" then
              { _type = "fileset"; files = _walk x; }
            else
              { _type = "fileset"; files = { ${toString x} = "regular"; }; }
          )
        else
          throw "stub lib.fileset.${ctx}: argument is neither a path nor a file set";

      unions = list: {
        _type = "fileset";
        files = builtins.foldl' (acc: fs: acc // (_coerce "unions" fs).files) { } list;
      };
      union = a: b: unions [ a b ];

      fileFilter = pred: path:
        let
          all = (_coerce "fileFilter" path).files;
        in
        {
          _type = "fileset";
          files = filterAttrs (
            p: type:
            let
              name = baseNameOf p;
            in
            pred { inherit name type; hasExt = ext: hasSuffix ".${ext}" name; }
          ) all;
        };

      toSource = { root, fileset }:
        let
          r = toString root;
          files = (_coerce "toSource" fileset).files;
          outside = builtins.filter (p: !(hasPrefix "${r}/" p)) (builtins.attrNames files);
          parents = p: let d = dirOf p; in if d == r || !(hasPrefix "${r}/" d) then [ ] else [ d ] ++ parents d;
          dirs = builtins.listToAttrs (
            map (d: { name = d; value = true; }) (builtins.concatMap parents (builtins.attrNames files))
          );
        in
        if outside != [ ] then
          throw "stub lib.fileset.toSource: ${builtins.head outside} is not under root ${r}"
        else
          builtins.path {
            path = root;
            name = "source";
            filter = p: type: if type == "directory" then dirs ? ${p} else files ? ${p};
          };
    };
  };
in
lib

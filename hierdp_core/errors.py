"""Typed errors. Every error the core raises for bad input is a subclass of `HierdpError`,
so callers (CLI, dashboard) can turn it into one clear message without a traceback."""


class HierdpError(Exception):
    """Base class: the message names what is wrong (file, column, rows, value)."""


class InputError(HierdpError, ValueError):
    """A table or file is unusable: missing columns, bad values, wrong encoding, empty."""


class EncodingError(InputError):
    """A text file cannot be decoded in the encoding it was read with (UTF-8 unless one
    was given); ``place`` says where (the first undecodable byte and its line)."""

    def __init__(self, message: str, place: str = ""):
        super().__init__(message)
        self.place = place


class StructureError(InputError):
    """The declared public structure is unusable (a geography that does not nest, duplicate
    or missing codes, malformed declarations) or a data row lies outside it."""


class HierarchyError(HierdpError, ValueError):
    """The geography columns do not form a tree (a child with two parents, missing values)."""


class LevelOrderError(HierarchyError):
    """Levels named finest first: their codes nest in the order ``meant`` (coarse to fine),
    not in the order ``named``. The message names the order meant, ``subject`` and
    ``separator`` how (the command line's: ``--levels``, commas)."""

    def __init__(self, named, meant, subject: str = "the levels", separator: str = ", "):
        super().__init__(f"{subject} go from the coarsest to the finest: did you mean "
                         f"{separator.join(meant)}?")
        self.named, self.meant = tuple(named), tuple(meant)


class BudgetError(HierdpError, ValueError):
    """A privacy budget is invalid (epsilon <= 0, bad split) or would be overspent."""


class MechanismError(HierdpError, ValueError):
    """Unknown mechanism, unsupported query, or parameter out of its bounds."""


class ColumnRoleError(InputError):
    """One column given two roles that exclude each other (e.g. a level that is also the
    count column); the message names the column."""


class ManifestError(InputError):
    """A release's manifest that fails its seal: edited after it was written (checksum or
    signature), unsealed, or signed with another key; the message says which."""


class DuplicateRowsError(InputError):
    """Aggregated input with several rows of the same unit and category, refused on request
    (``duplicates="error"``); the message gives how many and an example."""


class InputChangedError(InputError):
    """An input file changed (written, truncated or replaced) while a release read it:
    refused before any noise is drawn or budget spent; the message names the file and
    what changed."""


class SizeLimitError(InputError):
    """A release would need more cells than allowed (``max_cells``); refused before
    allocating, the message gives the figure."""


class MemoryLimitError(SizeLimitError):
    """A release whose estimated memory exceeds the limit (``--max-memory``), refused
    before allocating; the message names the parameter that makes it too big and the
    largest value that would fit."""


class ReshapeError(InputError):
    """A wide table that cannot be melted into long form: no column matches, a wide column
    with another role, or a melted column whose name is taken; the message names them."""


class MissingCellsError(InputError):
    """Count cells left empty, refused (``missing="error"``); the message names the
    columns, how many cells and the first rows, and the command-line options; ``detail``
    is the message without them (for the dashboard's own words)."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail or message


class RaggedLevelError(StructureError):
    """A level code left empty where no unit may skip the level (without the ragged rule,
    or at the first level), or a unit passing through a level whose code is already a real
    unit there; the message names the column, rows and codes. ``detail``: the message
    without the command-line hint; ``skippable``: the ragged rule would accept the input."""

    def __init__(self, message: str, detail: str = "", skippable: bool = False):
        super().__init__(message)
        self.detail = detail or message
        self.skippable = skippable


class GeometryError(InputError):
    """A boundary file (GeoJSON, zipped Shapefile, GeoPackage) that cannot be used; the
    subclasses say why, the message names the file and what to fix."""


class GeometryFileError(GeometryError):
    """Not a readable boundary file: malformed, empty, unknown format, no polygons."""


class GeometryTooLargeError(GeometryError):
    """A boundary file over the size or feature limit; the message gives the figures."""


class GeometryCRSError(GeometryError):
    """Coordinates in an unknown or unusable reference system (no CRS and not lon/lat)."""


class GeometryPropertyError(GeometryError):
    """A property chosen to hold a level's codes is missing or empty in the file."""


class InvalidGeometryError(GeometryError):
    """Geometries that are empty or stay invalid after repair; the message counts them."""


def about(subject: str, exc: HierdpError) -> HierdpError:
    """``exc``'s error with its message led by ``subject`` ("Geometric noise: ..."): of its
    class when that takes the message alone, else an `InputError`."""
    try:
        return type(exc)(f"{subject}: {exc}")
    except TypeError:
        return InputError(f"{subject}: {exc}")

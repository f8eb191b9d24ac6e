pub(crate) mod pages;

! What the Fortran tests print: an integer as text, without formatted I/O.
! libgfortran copies a format string with strndup, which ASan's
! strict_string_checks (the sanitizer job's setting) reports as a read past
! the unterminated literal.
module fortran_test_text
  implicit none
  private
  public :: decimal

contains

  function decimal(value) result(text)
    integer, intent(in) :: value
    character(len=:), allocatable :: text
    integer :: rest
    rest = abs(value)
    text = ''
    do
      text = achar(iachar('0') + mod(rest, 10)) // text
      rest = rest / 10
      if (rest == 0) exit
    end do
    if (value < 0) text = '-' // text
  end function decimal

end module fortran_test_text
